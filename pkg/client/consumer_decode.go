package client

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/queueshq/queues/pkg/jsonscan"
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
	return members(b, func(key, val []byte) bool {
		if !bytes.EqualFold(key, []byte("messages")) {
			return true
		}
		if seen {
			return false
		}
		seen = true
		if string(val) == "null" {
			r.Messages = nil
			return true
		}
		r.Messages = r.Messages[:0]
		return items(val, func(item []byte) bool {
			r.Messages = append(r.Messages, Message{})
			return decodeMessage(item, &r.Messages[len(r.Messages)-1])
		})
	})
}

func decodeMessage(b []byte, m *Message) bool {
	seen := 0 // the fields set, one bit each, so a repeated key gives up
	return members(b, func(k, v []byte) bool {
		bit, ok := 0, true
		switch {
		case bytes.EqualFold(k, []byte("messageId")):
			bit = 1
			m.MessageID, ok = str(v)
		case bytes.EqualFold(k, []byte("body")):
			bit = 2
			m.Body, ok = str(v)
		case bytes.EqualFold(k, []byte("receiptHandle")):
			bit = 4
			m.ReceiptHandle, ok = str(v)
		case bytes.EqualFold(k, []byte("receiveCount")):
			bit = 8
			var n int64
			n, ok = integer(v)
			m.ReceiveCount = int(n)
		case bytes.EqualFold(k, []byte("sentAt")):
			bit = 16
			m.SentAt, ok = timestamp(v)
		case bytes.EqualFold(k, []byte("visibilityDeadline")):
			bit = 32
			m.VisibilityDeadline, ok = timestamp(v)
		case bytes.EqualFold(k, []byte("groupId")):
			bit = 64
			m.GroupID, ok = str(v)
		case bytes.EqualFold(k, []byte("sequenceNumber")):
			bit = 128
			m.SequenceNumber, ok = str(v)
		case bytes.EqualFold(k, []byte("attributes")):
			bit = 256
			m.Attributes, ok = attributes(v)
		case bytes.EqualFold(k, []byte("deadLetter")):
			bit = 512
			ok = json.Unmarshal(v, &m.DeadLetter) == nil
		case bytes.EqualFold(k, []byte("traceparent")):
			bit = 1024
			m.Traceparent, ok = str(v)
		default:
			return true // encoding/json ignores unknown fields too
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return ok
	})
}

func attributes(v []byte) (map[string]string, bool) {
	if string(v) == "null" {
		return nil, true
	}
	attrs := map[string]string{}
	ok := members(v, func(k, val []byte) bool {
		if _, dup := attrs[string(k)]; dup {
			return false
		}
		s, ok := str(val)
		attrs[string(k)] = s
		return ok && utf8.Valid(k)
	})
	return attrs, ok
}

// members calls fn with each key (quotes removed) and raw value of the object in b; false
// when b is not such an object, a key has an escape, or fn returned false.
func members(b []byte, fn func(key, val []byte) bool) bool {
	i := jsonscan.Space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if i = jsonscan.Space(b, i+1); i < len(b) && b[i] == '}' {
		return jsonscan.Space(b, i+1) == len(b)
	}
	for i < len(b) {
		k := jsonscan.Value(b, i)
		if k < 0 || b[i] != '"' || bytes.IndexByte(b[i:k], '\\') >= 0 {
			return false
		}
		key := b[i+1 : k-1]
		if i = jsonscan.Space(b, k); i >= len(b) || b[i] != ':' {
			return false
		}
		v0 := jsonscan.Space(b, i+1)
		v := jsonscan.Value(b, v0)
		if v < 0 || !fn(key, b[v0:v]) {
			return false
		}
		switch i = jsonscan.Space(b, v); {
		case i < len(b) && b[i] == '}':
			return jsonscan.Space(b, i+1) == len(b)
		case i >= len(b) || b[i] != ',':
			return false
		}
		i = jsonscan.Space(b, i+1)
	}
	return false
}

// items calls fn with each raw element of the array in b; false as for members.
func items(b []byte, fn func(val []byte) bool) bool {
	i := jsonscan.Space(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	if i = jsonscan.Space(b, i+1); i < len(b) && b[i] == ']' {
		return jsonscan.Space(b, i+1) == len(b)
	}
	for i < len(b) {
		v := jsonscan.Value(b, i)
		if v < 0 || !fn(b[i:v]) {
			return false
		}
		switch i = jsonscan.Space(b, v); {
		case i < len(b) && b[i] == ']':
			return jsonscan.Space(b, i+1) == len(b)
		case i >= len(b) || b[i] != ',':
			return false
		}
		i = jsonscan.Space(b, i+1)
	}
	return false
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
