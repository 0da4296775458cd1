package client

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/queueshq/queues/sdk/go/jsonscan"
)

// A one-pass reader of the receive answer, the consumer's hot path: encoding/json's
// reflective decode of {"messages":[…]} was a fifth of a consumer's CPU (service included,
// on one machine) at tens of thousands of messages a second. It reads what Message holds
// and gives up — the caller then decodes with encoding/json — on anything it does not
// follow: an escape in a key, a repeated key, a value of an unexpected type.

// receiveAnswer is the answer of POST /v1/queues/{queue}/receive.
type receiveAnswer struct {
	Messages []Message `json:"messages"`
}

// fastDecoder is an answer type with its own reader; false when the reader gave up.
type fastDecoder interface {
	decodeFast(b []byte) bool
}

func (r *receiveAnswer) decodeFast(b []byte) bool {
	if r.readMessages(b) {
		return true
	}
	// Leave no partial message behind for encoding/json, which decodes into the elements
	// already there.
	clear(r.Messages[:cap(r.Messages)])
	r.Messages = r.Messages[:0]
	return false
}

func (r *receiveAnswer) readMessages(b []byte) bool {
	seen := false
	return members(b, func(key []byte, b []byte, i int) (int, bool) {
		if !bytes.EqualFold(key, []byte("messages")) {
			return skip(b, i)
		}
		if seen {
			return 0, false
		}
		seen = true
		if bytes.HasPrefix(b[i:], []byte("null")) {
			r.Messages = nil
			return i + 4, true
		}
		r.Messages = r.Messages[:0]
		return items(b, i, func(b []byte, i int) (int, bool) {
			r.Messages = append(r.Messages, Message{})
			return decodeMessage(b, i, &r.Messages[len(r.Messages)-1])
		})
	})
}

// decodeMessage reads the message object at b[i:] into m and returns the index past it.
func decodeMessage(b []byte, i int, m *Message) (int, bool) {
	seen := 0 // the fields set, one bit each, so a repeated key gives up
	return object(b, i, func(k []byte, b []byte, i int) (int, bool) {
		bit, end, ok := 0, 0, false
		switch {
		case bytes.EqualFold(k, []byte("messageId")):
			bit = 1
			m.MessageID, end, ok = strAt(b, i)
		case bytes.EqualFold(k, []byte("body")):
			bit = 2
			m.Body, end, ok = strAt(b, i)
		case bytes.EqualFold(k, []byte("receiptHandle")):
			bit = 4
			m.ReceiptHandle, end, ok = strAt(b, i)
		case bytes.EqualFold(k, []byte("groupId")):
			bit = 8
			m.GroupID, end, ok = strAt(b, i)
		case bytes.EqualFold(k, []byte("sequenceNumber")):
			bit = 16
			m.SequenceNumber, end, ok = strAt(b, i)
		case bytes.EqualFold(k, []byte("traceparent")):
			bit = 1024
			m.Traceparent, end, ok = strAt(b, i)
		default:
			if end = jsonscan.Value(b, i); end < 0 {
				return 0, false
			}
			v := b[i:end]
			switch {
			case bytes.EqualFold(k, []byte("receiveCount")):
				bit = 32
				var n int64
				n, ok = integer(v)
				m.ReceiveCount = int(n)
			case bytes.EqualFold(k, []byte("sentAt")):
				bit = 64
				m.SentAt, ok = timestamp(v)
			case bytes.EqualFold(k, []byte("visibilityDeadline")):
				bit = 128
				m.VisibilityDeadline, ok = timestamp(v)
			case bytes.EqualFold(k, []byte("attributes")):
				bit = 256
				m.Attributes, ok = attributes(v)
			case bytes.EqualFold(k, []byte("deadLetter")):
				bit = 512
				ok = json.Unmarshal(v, &m.DeadLetter) == nil
			case bytes.EqualFold(k, []byte("replayOf")):
				bit = 2048
				ok = json.Unmarshal(v, &m.ReplayOf) == nil
			case bytes.EqualFold(k, []byte("priority")):
				bit = 4096
				var n int64
				n, ok = integer(v)
				m.Priority = int(n)
			default:
				return end, true // encoding/json ignores unknown fields too
			}
		}
		if seen&bit != 0 {
			return 0, false
		}
		seen |= bit
		return end, ok
	})
}

func attributes(v []byte) (map[string]string, bool) {
	if string(v) == "null" {
		return nil, true
	}
	attrs := map[string]string{}
	ok := members(v, func(k []byte, b []byte, i int) (int, bool) {
		if _, dup := attrs[string(k)]; dup || !utf8.Valid(k) {
			return 0, false
		}
		s, end, ok := strAt(b, i)
		attrs[string(k)] = s
		return end, ok
	})
	return attrs, ok
}

// member reads one value of an object: b[i:] starts with it; it returns the index just
// past it, or false to give up.
type member func(key []byte, b []byte, i int) (int, bool)

// members walks the object that is all of b (whitespace aside).
func members(b []byte, fn member) bool {
	end, ok := object(b, jsonscan.Space(b, 0), fn)
	return ok && jsonscan.Space(b, end) == len(b)
}

// object walks the object at b[i:], calling fn for each member (its key without quotes),
// and returns the index past it; false when it is not such an object, a key has an escape,
// or fn gave up.
func object(b []byte, i int, fn member) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	if i = jsonscan.Space(b, i+1); i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for i < len(b) {
		k := jsonscan.String(b, i)
		if b[i] != '"' || k < 0 || bytes.IndexByte(b[i:k], '\\') >= 0 {
			return 0, false
		}
		key := b[i+1 : k-1]
		if i = jsonscan.Space(b, k); i >= len(b) || b[i] != ':' {
			return 0, false
		}
		v, ok := fn(key, b, jsonscan.Space(b, i+1))
		if !ok {
			return 0, false
		}
		switch i = jsonscan.Space(b, v); {
		case i < len(b) && b[i] == '}':
			return i + 1, true
		case i >= len(b) || b[i] != ',':
			return 0, false
		}
		i = jsonscan.Space(b, i+1)
	}
	return 0, false
}

// items walks the array at b[i:], calling fn for each element, and returns the index past it.
func items(b []byte, i int, fn func(b []byte, i int) (int, bool)) (int, bool) {
	if i >= len(b) || b[i] != '[' {
		return 0, false
	}
	if i = jsonscan.Space(b, i+1); i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for i < len(b) {
		v, ok := fn(b, i)
		if !ok {
			return 0, false
		}
		switch i = jsonscan.Space(b, v); {
		case i < len(b) && b[i] == ']':
			return i + 1, true
		case i >= len(b) || b[i] != ',':
			return 0, false
		}
		i = jsonscan.Space(b, i+1)
	}
	return 0, false
}

// skip passes over the value at b[i:].
func skip(b []byte, i int) (int, bool) {
	end := jsonscan.Value(b, i)
	return end, end >= 0
}

// strAt reads the string at b[i:] and returns the index past it.
func strAt(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	end := jsonscan.String(b, i)
	if end < 0 {
		return "", 0, false
	}
	s, ok := str(b[i:end])
	return s, end, ok
}

// str decodes a raw JSON string; one with an escape or bytes that are not UTF-8 (which
// encoding/json replaces) goes through encoding/json.
func str(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		for _, c := range in {
			if c < 0x20 {
				return "", false
			}
		}
		return string(in), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

func integer(raw []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

func timestamp(raw []byte) (time.Time, bool) {
	var t time.Time
	return t, t.UnmarshalJSON(raw) == nil
}
