package embeddedengine

import (
	"reflect"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// The stored topic records are read back from the bolt file, which a power cut, a bad disk
// or a bad copy can damage: their decoders refuse damage, never panic, and what they accept
// re-encodes to a record that decodes the same.

func FuzzTopicRecord(f *testing.F) {
	project := ids.New()
	f.Add(encodeTopic(&topic{project: project, fifo: true, active: true, wakeAt: 1700000000000, last: 9, first: 3, logBytes: 100, stateBytes: 7}))
	f.Add(encodeTopic(&topic{project: project, first: 1}))
	for _, v := range []string{"", "\x01", "\x02\x00\x00\x01", "\x01\x04\x05\x01\x00\x00", "\x01\x00\x00\x00\x00\x00"} {
		f.Add([]byte(v))
	}
	id := ids.New()
	f.Fuzz(func(t *testing.T, v []byte) {
		tp, err := decodeTopic(id, v)
		if err != nil {
			return
		}
		if tp.first == 0 || tp.first > tp.last+1 {
			t.Fatalf("%q: accepted first %d, last %d", v, tp.first, tp.last)
		}
		again, err := decodeTopic(id, encodeTopic(tp))
		if err != nil || again.project != tp.project || again.fifo != tp.fifo || again.active != tp.active ||
			again.wakeAt != tp.wakeAt || again.last != tp.last || again.first != tp.first ||
			again.logBytes != tp.logBytes || again.stateBytes != tp.stateBytes {
			t.Fatalf("%q: %+v re-encodes to %+v, %v", v, tp, again, err)
		}
	})
}

func FuzzTopicEntry(f *testing.F) {
	e := engine.LogEntry{MessageID: ids.New(), PublishedAt: time.UnixMilli(1700000000123).UTC(), Body: "b",
		Attributes: map[string]string{"c": "red"}, GroupID: "g", DedupID: "d", Key: "k"}
	f.Add(seqKey(5), encodeEntry(&e))
	f.Add(seqKey(1), encodeEntry(&engine.LogEntry{Key: "k", Deleted: true}))
	for _, v := range []string{"", "\x01", "\x01\x00\x00", "\x02\x00\x00", "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"} {
		f.Add(seqKey(1), []byte(v))
	}
	f.Add([]byte("short"), encodeEntry(&e))
	f.Fuzz(func(t *testing.T, k, v []byte) {
		at, _, herr := entryHead(v)
		got, err := decodeEntry(k, v)
		if err != nil {
			return
		}
		if herr != nil || at != got.PublishedAt.UnixMilli() {
			t.Fatalf("%q: decoded, but its head reads %d, %v", v, at, herr)
		}
		again, err := decodeEntry(k, encodeEntry(&got))
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("%q: %+v re-encodes to %+v, %v", v, got, again, err)
		}
	})
}

func FuzzTopicState(f *testing.F) {
	f.Add([]byte("k"), encodeStateEntry(&engine.StateEntry{Key: "k", Body: "b", Attributes: map[string]string{"a": ""}, Sequence: 4,
		PublishedAt: time.UnixMilli(1700000000123).UTC()}))
	for _, v := range []string{"", "\x01", "\x01\x01\x02", "\x02\x01\x02\x00\x00", "\x01\x01\x02\x09ab\x00"} {
		f.Add([]byte("k"), []byte(v))
	}
	f.Fuzz(func(t *testing.T, k, v []byte) {
		st, err := decodeStateEntry(k, v)
		if err != nil {
			return
		}
		again, err := decodeStateEntry(k, encodeStateEntry(&st))
		if err != nil || !reflect.DeepEqual(again, st) {
			t.Fatalf("%q: %+v re-encodes to %+v, %v", v, st, again, err)
		}
	})
}

func FuzzTopicBinding(f *testing.F) {
	f.Add(encodeBinding(&engine.Binding{Queue: ids.New(), Filter: `{"attributes":{"c":["red"]}}`, Sequence: 1 << 40, Copied: 3,
		Failed: 1, LastError: "queue_full", LastErrorAt: time.UnixMilli(1700000000999).UTC()}))
	f.Add(encodeBinding(&engine.Binding{}))
	for _, v := range []string{"", "\x01", "\x02", "\x01" + string(make([]byte, 16)) + "\xff\x01"} {
		f.Add([]byte(v))
	}
	id := ids.New()
	f.Fuzz(func(t *testing.T, v []byte) {
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

func FuzzTopicDedup(f *testing.F) {
	f.Add(encodeTopicDedup(topicDedup{id: ids.New(), seq: 7, expiresAt: 1700000300000}))
	for _, v := range []string{"", "short", string(make([]byte, 16)), string(make([]byte, 16)) + "\x01"} {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		d, err := decodeTopicDedup(v)
		if err != nil {
			return
		}
		again, err := decodeTopicDedup(encodeTopicDedup(d))
		if err != nil || again != d {
			t.Fatalf("%q: %+v re-encodes to %+v, %v", v, d, again, err)
		}
	})
}
