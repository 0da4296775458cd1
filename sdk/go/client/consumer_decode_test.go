package client

import (
	"encoding/json"
	"reflect"
	"testing"
)

const receiveSample = `{"messages":[{"messageId":"0b8f7a52-8d6e-4f34-a1f4-6e9d8c7b5a43","body":"hello \"world\"","attributes":{"kind":"greeting","n":"1"},"receiptHandle":"rh1.abc-def_ghi","receiveCount":2,"sentAt":"2026-11-30T12:00:00.123Z","visibilityDeadline":"2026-11-30T12:00:30.123Z","groupId":"g1","sequenceNumber":"42","deadLetter":{"sourceQueue":"3b1e","reason":"poison","at":"2026-11-30T11:59:00.000Z"}},{"messageId":"m2","body":"ünïcode ☃","attributes":{},"receiptHandle":"rh2","receiveCount":1,"sentAt":"2026-11-30T12:00:01.000Z","visibilityDeadline":"2026-11-30T12:00:31.000Z","priority":7}]}`

// decodeBoth decodes b with the one-pass reader and with encoding/json; ok is whether the
// reader took it.
func decodeBoth(t testing.TB, b []byte) (fast, slow receiveAnswer, ok bool, slowErr error) {
	fast.Messages = make([]Message, 0, 10)
	ok = fast.decodeFast(b)
	slowErr = json.Unmarshal(b, &slow)
	return fast, slow, ok, slowErr
}

// The reader reads what encoding/json reads, escapes, unicode, attributes, fifo and
// dead-letter fields included, and gives up (for encoding/json to decode) on what it does
// not follow.
func TestDecodeReceive(t *testing.T) {
	fast, slow, ok, err := decodeBoth(t, []byte(receiveSample))
	if !ok || err != nil {
		t.Fatalf("fast %v, encoding/json %v", ok, err)
	}
	if !reflect.DeepEqual(fast.Messages, slow.Messages) {
		t.Fatalf("fast %+v\nslow %+v", fast.Messages, slow.Messages)
	}
	if fast.Messages[0].Body != `hello "world"` || fast.Messages[0].DeadLetter.Reason != "poison" || fast.Messages[1].Attributes == nil {
		t.Fatalf("decoded %+v", fast.Messages)
	}
	for _, giveUp := range []string{
		`{"messages":[{"body":"a","body":"b"}]}`, // repeated key
		`{"messages":[{"b\u006fdy":"a"}]}`,       // escaped key
		`{"messages":[{"receiveCount":"1"}]}`,    // wrong type
		`{"messages":[{"body":1}]}`,
		`{"messages":[] } x`,
		`[]`,
	} {
		if _, _, ok, _ := decodeBoth(t, []byte(giveUp)); ok {
			t.Errorf("the reader took %s", giveUp)
		}
	}
}

// Whatever the reader takes, encoding/json decodes to the same messages.
func FuzzDecodeReceive(f *testing.F) {
	f.Add([]byte(receiveSample))
	f.Add([]byte(`{"messages":[]}`))
	f.Add([]byte(`{"messages":null}`))
	f.Add([]byte(`{"messages":[{"body":"\ud83d\ude00","attributes":null}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, slow, ok, err := decodeBoth(t, b)
		if !ok || !json.Valid(b) {
			return
		}
		if err != nil {
			t.Fatalf("the reader took %q, encoding/json refused it: %v", b, err)
		}
		if len(fast.Messages) == 0 && len(slow.Messages) == 0 {
			return
		}
		if !reflect.DeepEqual(fast.Messages, slow.Messages) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", b, fast.Messages, slow.Messages)
		}
	})
}

// The consumer's hand-written ack body is the JSON encoding/json writes.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "AQlrMjAy_-.", `quote " and \ backslash`, "tab\tnl\n\x01", "ünïcode ☃"} {
		want, _ := json.Marshal(s)
		var back string
		if err := json.Unmarshal(appendJSONString(nil, s), &back); err != nil || back != s {
			t.Errorf("%q: appended %s (encoding/json: %s), decodes to %q, %v", s, appendJSONString(nil, s), want, back, err)
		}
	}
}
