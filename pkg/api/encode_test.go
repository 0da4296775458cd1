package api

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

func randString(r *rand.Rand) string {
	pieces := []string{"a", "Z", " ", "\"", "\\", "<", ">", "&", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "\x7f",
		"é", "日本", "\u2028", "\u2029", "\xff", "\xc3", "😀", "/", "'", "\u00a0", "\ufffd"}
	var b []byte
	for range r.IntN(12) {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return string(b)
}

func stdJSON(t *testing.T, v any) []byte {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The hand-written encoders write exactly what encoding/json (as echo's c.JSON) writes.
func TestEncodersMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		s := randString(r)
		if got, want := appendJSONString(nil, s), stdJSON(t, s); !bytes.Equal(append(got, '\n'), want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	}
	for i := range 300 {
		sent := make([]sendOK, r.IntN(11))
		for j := range sent {
			sent[j] = sendOK{Index: j * 2, MessageID: randString(r), Duplicate: r.IntN(2) == 0}
			if r.IntN(2) == 0 {
				sent[j].SequenceNumber = seqNumber(r.Uint64())
			}
		}
		if got, want := appendSendAnswer(nil, sent), stdJSON(t, map[string]any{"messages": sent, "failed": []sendFailed{}}); !bytes.Equal(got, want) {
			t.Fatalf("send answer:\n got %s\nwant %s", got, want)
		}
		out := make([]receivedJSON, r.IntN(11))
		for j := range out {
			m := receivedJSON{MessageID: randString(r), Body: randString(r), ReceiptHandle: randString(r),
				ReceiveCount: r.IntN(100), SentAt: randString(r), VisibilityDeadline: randString(r)}
			if i%3 != 0 {
				m.Attributes = map[string]string{}
				for range r.IntN(4) {
					m.Attributes[randString(r)] = randString(r)
				}
			}
			if r.IntN(2) == 0 {
				m.GroupID, m.SequenceNumber = randString(r), randString(r)
			} else {
				m.Priority = prioOut(false, r.IntN(10))
			}
			if r.IntN(3) == 0 {
				m.DeadLetter = &deadLetterJSON{SourceQueue: randString(r), Reason: randString(r), At: randString(r)}
			}
			out[j] = m
		}
		if got, want := appendReceiveAnswer(nil, out), stdJSON(t, map[string]any{"messages": out}); !bytes.Equal(got, want) {
			t.Fatalf("receive answer:\n got %s\nwant %s", got, want)
		}
	}
}
