package api

import (
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// Hand-written encoders for the answers of the hottest routes (send and receive): the same
// bytes encoding/json writes for them (map keys sorted, HTML-safe escaping, invalid UTF-8 as
// U+FFFD, a trailing newline as echo's JSON), without reflection or per-field allocations,
// into pooled buffers. encode_test.go checks them against encoding/json.

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// blob answers status with the JSON that build appends.
func blob(c echo.Context, status int, build func(b []byte) []byte) error {
	bp := bufPool.Get().(*[]byte)
	b := build((*bp)[:0])
	// With its length known, net/http writes the answer as is; without, one over 2 KiB (a
	// receive of 10) goes out chunked, framing and an extra write included.
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(b)))
	err := c.Blob(status, echo.MIMEApplicationJSON, b)
	if cap(b) <= 1<<20 { // keep big buffers out of the pool
		*bp = b
		bufPool.Put(bp)
	}
	return err
}

// appendSendAnswer appends {"failed":[],"messages":[…]} (only for sends with no failures).
func appendSendAnswer(b []byte, sent []sendOK) []byte {
	b = append(b, `{"failed":[],"messages":[`...)
	for i, m := range sent {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(m.Index), 10)
		b = append(b, `,"messageId":`...)
		b = appendJSONString(b, m.MessageID)
		b = append(b, `,"duplicate":`...)
		b = strconv.AppendBool(b, m.Duplicate)
		b = append(b, `,"merged":`...)
		b = strconv.AppendBool(b, m.Merged)
		if m.SequenceNumber != 0 {
			b = append(b, `,"sequenceNumber":`...)
			b = appendSeqNumber(b, m.SequenceNumber)
		}
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

// appendReceiveAnswer appends {"messages":[…]}.
func appendReceiveAnswer(b []byte, out []receivedJSON) []byte {
	b = append(b, `{"messages":[`...)
	for i := range out {
		if i > 0 {
			b = append(b, ',')
		}
		m := &out[i]
		b = append(b, `{"messageId":`...)
		b = appendJSONString(b, m.MessageID)
		b = append(b, `,"body":`...)
		b = appendJSONString(b, m.Body)
		b = append(b, `,"attributes":`...)
		b = appendStringMap(b, m.Attributes)
		if m.ReceiptHandle != "" { // absent on at-most-once queues
			b = append(b, `,"receiptHandle":`...)
			b = appendJSONString(b, m.ReceiptHandle)
		}
		b = append(b, `,"receiveCount":`...)
		b = strconv.AppendInt(b, int64(m.ReceiveCount), 10)
		b = append(b, `,"sentAt":`...)
		b = appendJSONString(b, m.SentAt)
		if m.VisibilityDeadline != "" {
			b = append(b, `,"visibilityDeadline":`...)
			b = appendJSONString(b, m.VisibilityDeadline)
		}
		if m.GroupID != "" {
			b = append(b, `,"groupId":`...)
			b = appendJSONString(b, m.GroupID)
		}
		if m.SequenceNumber != "" {
			b = append(b, `,"sequenceNumber":`...)
			b = appendJSONString(b, m.SequenceNumber)
		}
		if d := m.DeadLetter; d != nil {
			b = append(b, `,"deadLetter":{"sourceQueue":`...)
			b = appendJSONString(b, d.SourceQueue)
			b = append(b, `,"reason":`...)
			b = appendJSONString(b, d.Reason)
			b = append(b, `,"at":`...)
			b = appendJSONString(b, d.At)
			b = append(b, '}')
		}
		if m.Traceparent != "" {
			b = append(b, `,"traceparent":`...)
			b = appendJSONString(b, m.Traceparent)
		}
		if m.Priority != nil {
			b = append(b, `,"priority":`...)
			b = strconv.AppendInt(b, int64(*m.Priority), 10)
		}
		b = appendReplayOf(b, m.ReplayOf)
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

// appendStringMap appends m as a JSON object with sorted keys (null for a nil map).
func appendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	if len(m) == 1 {
		for k, v := range m {
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, v)
		}
		return append(b, '}')
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, m[k])
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// safeASCII marks the ASCII bytes encoding/json (with HTML escaping) writes unescaped.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString appends s quoted exactly as encoding/json's default (HTML-safe) encoder.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
