package redisengine

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// The stored topic records are read back from Redis, where damage (a restore from a bad
// copy, a hand edit) is possible: their decoders refuse it, never panic, and what they accept
// re-encodes to a record that decodes the same.

func FuzzTopicEntry(f *testing.F) {
	id := ids.New()
	f.Add(string(encodeEntry(id, engine.PublishMessage{Message: engine.Message{Key: "k"}}, "body", map[string]string{"a": "b"})))
	f.Add(string(encodeEntry(id, engine.PublishMessage{Message: engine.Message{GroupID: "g", DedupID: "d", Key: "k"}, Delete: true}, "", nil)))
	f.Add(string(encodeEntry(id, engine.PublishMessage{}, "", map[string]string{"": "", "x": "|"})))
	for _, s := range []string{"", "\x01", "\x02\x00", "\x01\x02", "\x01\x00" + string(id[:]) + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := decodeEntry(s)
		if err != nil {
			return
		}
		m := engine.PublishMessage{Message: engine.Message{GroupID: e.GroupID, DedupID: e.DedupID, Key: e.Key}, Delete: e.Deleted}
		again, err := decodeEntry(string(encodeEntry(e.MessageID, m, e.Body, e.Attributes)))
		if err != nil || !reflect.DeepEqual(again, e) {
			t.Fatalf("%q: %+v re-encodes to %+v, %v", s, e, again, err)
		}
	})
}

func FuzzTopicState(f *testing.F) {
	f.Add("k", "7|1700000000123|5|"+string(encodeState("a|b|c", map[string]string{"c": "red"})))
	f.Add("", "1|0|0|"+string(encodeState("", nil)))
	for _, v := range []string{"", "|||", "1|2|3", "x|1|1|\x00\x00", "1|-1|1|\x00\x00", "1|1|1|\x05ab\x00", "18446744073709551616|1|1|\x00\x00"} {
		f.Add("k", v)
	}
	f.Fuzz(func(t *testing.T, key, v string) {
		st, err := decodeState(key, v)
		if err != nil {
			return
		}
		enc := strconv.FormatUint(st.Sequence, 10) + "|" + strconv.FormatInt(st.PublishedAt.UnixMilli(), 10) + "|0|" +
			string(encodeState(st.Body, st.Attributes))
		again, err := decodeState(key, enc)
		if err != nil || !reflect.DeepEqual(again, st) {
			t.Fatalf("%q: %+v re-encodes to %+v, %v", v, st, again, err)
		}
	})
}

func FuzzTopicBinding(f *testing.F) {
	q := ids.New()
	f.Add(encodeBinding(engine.Binding{Queue: q, Filter: `{"attributes":{"c":["a|b"]}}`, Sequence: 9, Copied: 3, Failed: 1,
		LastError: "queue_full: 5|6", LastErrorAt: time.UnixMilli(1700000000999).UTC()}))
	f.Add(encodeBinding(engine.Binding{Queue: q}))
	for _, v := range []string{"", "1|2|3|4|" + q.String() + "|99:short", "1|2|3|4|" + q.String() + "|-1:x", "1|2|3|4|x|0:",
		"1|2|3|4|" + q.String() + "|", "-1|2|3|4|" + q.String() + "|0:", "1|2|3|-5|" + q.String() + "|0:err"} {
		f.Add(v)
	}
	id := ids.New()
	f.Fuzz(func(t *testing.T, v string) {
		b, err := decodeBinding(id, v)
		if err != nil {
			return
		}
		again, err := decodeBinding(id, encodeBinding(b))
		if err != nil || !reflect.DeepEqual(again, b) {
			t.Fatalf("%q: %+v re-encodes to %+v, %v", v, b, again, err)
		}
	})
}
