package bench

import (
	"bytes"
	"encoding/json"

	"github.com/queueshq/queues/sdk/go/jsonscan"
)

// A hand-rolled reader for the three answers the generator reads on its hot path (send,
// receive, ack): it walks the bytes once and copies only what the generator looks at, where
// encoding/json's reflective decode was a quarter of the generator's CPU, CPU it shares with
// the service it measures. Anything it does not follow makes it give up, and the caller
// decodes with encoding/json instead.

// fastDecoder is an answer type with such a reader; ok is false when it gave up.
type fastDecoder interface {
	decodeFast(b []byte) (ok bool)
}

// members calls fn with each key (quotes removed) and raw value of the object in b; false
// when b is not such an object, a key has an escape, or fn returned false.
func members(b []byte, fn func(key, val []byte) bool) bool {
	i := jsonscan.Space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = jsonscan.Space(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) {
		k := jsonscan.Value(b, i)
		if k < 0 || b[i] != '"' {
			return false
		}
		key := b[i+1 : k-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = jsonscan.Space(b, k)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		v0 := jsonscan.Space(b, i+1)
		v := jsonscan.Value(b, v0)
		if v < 0 || !fn(key, b[v0:v]) {
			return false
		}
		i = jsonscan.Space(b, v)
		if i < len(b) && b[i] == '}' {
			return true
		}
		if i >= len(b) || b[i] != ',' {
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
	i = jsonscan.Space(b, i+1)
	if i < len(b) && b[i] == ']' {
		return true
	}
	for i < len(b) {
		v := jsonscan.Value(b, i)
		if v < 0 || !fn(b[i:v]) {
			return false
		}
		i = jsonscan.Space(b, v)
		if i < len(b) && b[i] == ']' {
			return true
		}
		if i >= len(b) || b[i] != ',' {
			return false
		}
		i = jsonscan.Space(b, i+1)
	}
	return false
}

// str decodes a raw JSON string; escapes go through encoding/json.
func str(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// is matches a key as encoding/json does: case-insensitively.
func is(key []byte, name string) bool { return bytes.EqualFold(key, []byte(name)) }

func (r *receiveResp) decodeFast(b []byte) bool {
	return members(b, func(key, val []byte) bool {
		if !is(key, "messages") {
			return true
		}
		if r.Messages != nil {
			return false // a repeated key: encoding/json merges, leave it to it
		}
		r.Messages = []receivedMsg{}
		return items(val, func(m []byte) bool {
			var rm receivedMsg
			ok := members(m, func(k, v []byte) bool {
				var ok bool
				switch {
				case is(k, "body"):
					rm.Body, ok = str(v)
					return ok
				case is(k, "receiptHandle"):
					rm.ReceiptHandle, ok = str(v)
					return ok
				}
				return true
			})
			r.Messages = append(r.Messages, rm)
			return ok
		})
	})
}

func (r *ackResp) decodeFast(b []byte) bool {
	return members(b, func(key, val []byte) bool {
		if !is(key, "results") {
			return true
		}
		if r.Results != nil {
			return false
		}
		r.Results = []ackResult{}
		return items(val, func(res []byte) bool {
			var e ackResult
			ok := members(res, func(k, v []byte) bool {
				if !is(k, "error") {
					return true
				}
				if string(v) == "null" {
					e.Error = nil
					return true
				}
				e.Error = &ackError{}
				return json.Unmarshal(v, e.Error) == nil
			})
			r.Results = append(r.Results, e)
			return ok
		})
	})
}

func (r *sendResp) decodeFast(b []byte) bool {
	return members(b, func(key, val []byte) bool {
		switch {
		case is(key, "messages"):
			if r.Messages != nil {
				return false
			}
			r.Messages = []sendResult{}
			return items(val, func(m []byte) bool {
				var d sendResult
				ok := members(m, func(k, v []byte) bool {
					if is(k, "duplicate") {
						d.Duplicate = string(v) == "true"
					}
					return true
				})
				r.Messages = append(r.Messages, d)
				return ok
			})
		case is(key, "failed"):
			if r.Failed != nil {
				return false
			}
			r.Failed = []json.RawMessage{}
			return items(val, func(f []byte) bool {
				r.Failed = append(r.Failed, json.RawMessage(bytes.Clone(f)))
				return true
			})
		}
		return true
	})
}
