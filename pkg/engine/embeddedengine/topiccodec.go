package embeddedengine

import (
	"encoding/binary"
	"slices"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/internal/wire"
	"github.com/queueshq/queues/pkg/ids"
)

// Topic records (docs/topics.md; all start with the version byte, 1). Only buckets were added to
// format version 1 for them: a binary without topics ignores these buckets.
//
//	topic   (bucket "t", key topic id): byte flags (bit 0: fifo, bit 1: active, i.e. in
//	        ActiveTopics, bit 2: has a wake time), uvarint last sequence, uvarint first
//	        sequence held, varint log bytes, varint state bytes, 16 bytes project id, and with
//	        bit 2 varint the wake time (ms: IdleTopic's wakeAt)
//	entry   (bucket "tl" ‖ topic id, one per topic, key 8-byte big-endian sequence): varint
//	        publishedAt, uvarint stored bytes, 16 bytes message id, byte flags (bit 0:
//	        deleted), string body, attributes (as a payload's), string group id, string
//	        dedup id, string key. publishedAt and the size come first: a trim reads only them.
//	state   (bucket "ts" ‖ topic id, one per topic, key the state's key): uvarint sequence,
//	        varint publishedAt, string body, attributes
//	binding (bucket "tb", key topic id ‖ binding id): 16 bytes queue id, string filter,
//	        uvarint sequence, varint copied, varint failed, string last error, varint its time
//	dedup   (bucket "td", key topic id ‖ dedup id): 16 bytes message id, uvarint sequence,
//	        varint expiresAt
//	mark    (bucket "hw", key queue id ‖ binding id): uvarint the binding's high-water mark
//	        in the queue (Copy); no version byte
var (
	bucketTopic      = []byte("t")
	bucketBindings   = []byte("tb")
	bucketTopicDedup = []byte("td")
	bucketMarks      = []byte("hw")
	prefixTopicLog   = []byte("tl")
	prefixTopicState = []byte("ts")
)

func topicLogBucket(t ids.ID) []byte   { return slices.Concat(prefixTopicLog, t[:]) }
func topicStateBucket(t ids.ID) []byte { return slices.Concat(prefixTopicState, t[:]) }

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func pairKey(a, b ids.ID) []byte { return slices.Concat(a[:], b[:]) }

func topicDedupKey(t ids.ID, dedup string) []byte { return append(slices.Clone(t[:]), dedup...) }

func encodeTopic(t *topic) []byte {
	var flags byte
	if t.fifo {
		flags |= 1
	}
	if t.active {
		flags |= 2
	}
	if t.wakeAt != 0 {
		flags |= 4
	}
	b := []byte{recVersion, flags}
	b = binary.AppendUvarint(b, t.last)
	b = binary.AppendUvarint(b, t.first)
	b = binary.AppendVarint(b, t.logBytes)
	b = binary.AppendVarint(b, t.stateBytes)
	b = append(b, t.project[:]...)
	if t.wakeAt != 0 {
		b = binary.AppendVarint(b, t.wakeAt)
	}
	return b
}

func decodeTopic(id ids.ID, v []byte) (*topic, error) {
	r := wire.NewReader(v)
	ver, flags := r.Byte(), r.Byte()
	t := newTopic(id, flags&1 != 0)
	t.active = flags&2 != 0
	t.last, t.first = r.Uvarint(), r.Uvarint()
	t.logBytes, t.stateBytes = r.Varint(), r.Varint()
	copy(t.project[:], r.Bytes(16))
	if flags&4 != 0 {
		t.wakeAt = r.Varint()
	}
	if !r.Done() || ver != recVersion || t.first == 0 || t.first > t.last+1 {
		return nil, errBadRecord
	}
	return t, nil
}

func encodeEntry(e *engine.LogEntry) []byte {
	b := make([]byte, 0, 48+len(e.Body)+len(e.GroupID)+len(e.DedupID)+len(e.Key))
	b = append(b, recVersion)
	b = binary.AppendVarint(b, e.PublishedAt.UnixMilli())
	b = binary.AppendUvarint(b, uint64(engine.PayloadBytes(e.Body, e.Attributes)))
	b = append(b, e.MessageID[:]...)
	var flags byte
	if e.Deleted {
		flags = 1
	}
	b = append(b, flags)
	b = wire.AppendString(b, e.Body)
	b = wire.AppendAttributes(b, e.Attributes)
	b = wire.AppendString(b, e.GroupID)
	b = wire.AppendString(b, e.DedupID)
	return wire.AppendString(b, e.Key)
}

// entryHead reads an entry's publish time (ms) and stored bytes.
func entryHead(v []byte) (publishedAt int64, size int64, err error) {
	r := wire.NewReader(v)
	ver := r.Byte()
	publishedAt, size = r.Varint(), int64(r.Uvarint())
	if !r.OK() || ver != recVersion {
		return 0, 0, errBadRecord
	}
	return publishedAt, size, nil
}

func decodeEntry(k, v []byte) (engine.LogEntry, error) {
	r := wire.NewReader(v)
	ver := r.Byte()
	e := engine.LogEntry{PublishedAt: fromMs(r.Varint())}
	r.Uvarint()
	copy(e.MessageID[:], r.Bytes(16))
	flags := r.Byte()
	e.Deleted = flags&1 != 0
	e.Body = r.String()
	e.Attributes = r.Attributes()
	e.GroupID, e.DedupID, e.Key = r.String(), r.String(), r.String()
	if !r.Done() || ver != recVersion || len(k) != 8 {
		return engine.LogEntry{}, errBadRecord
	}
	e.Sequence = binary.BigEndian.Uint64(k)
	return e, nil
}

func encodeStateEntry(s *engine.StateEntry) []byte {
	b := make([]byte, 0, 24+len(s.Body))
	b = append(b, recVersion)
	b = binary.AppendUvarint(b, s.Sequence)
	b = binary.AppendVarint(b, s.PublishedAt.UnixMilli())
	b = wire.AppendString(b, s.Body)
	return wire.AppendAttributes(b, s.Attributes)
}

func decodeStateEntry(k, v []byte) (engine.StateEntry, error) {
	r := wire.NewReader(v)
	ver := r.Byte()
	s := engine.StateEntry{Key: string(k), Sequence: r.Uvarint(), PublishedAt: fromMs(r.Varint())}
	s.Body = r.String()
	s.Attributes = r.Attributes()
	if !r.Done() || ver != recVersion {
		return engine.StateEntry{}, errBadRecord
	}
	return s, nil
}

func encodeBinding(b *engine.Binding) []byte {
	out := append([]byte{recVersion}, b.Queue[:]...)
	out = wire.AppendString(out, b.Filter)
	out = binary.AppendUvarint(out, b.Sequence)
	out = binary.AppendVarint(out, b.Copied)
	out = binary.AppendVarint(out, b.Failed)
	out = wire.AppendString(out, b.LastError)
	var at int64
	if !b.LastErrorAt.IsZero() {
		at = b.LastErrorAt.UnixMilli()
	}
	return binary.AppendVarint(out, at)
}

func decodeBinding(id ids.ID, v []byte) (*engine.Binding, error) {
	r := wire.NewReader(v)
	ver := r.Byte()
	b := &engine.Binding{ID: id}
	copy(b.Queue[:], r.Bytes(16))
	b.Filter = r.String()
	b.Sequence = r.Uvarint()
	b.Copied, b.Failed = r.Varint(), r.Varint()
	b.LastError = r.String()
	b.LastErrorAt = timeOrZero(r.Varint())
	if !r.Done() || ver != recVersion {
		return nil, errBadRecord
	}
	return b, nil
}

func encodeTopicDedup(d topicDedup) []byte {
	b := slices.Clone(d.id[:])
	b = binary.AppendUvarint(b, d.seq)
	return binary.AppendVarint(b, d.expiresAt)
}

func decodeTopicDedup(v []byte) (topicDedup, error) {
	r := wire.NewReader(v)
	var d topicDedup
	copy(d.id[:], r.Bytes(16))
	d.seq, d.expiresAt = r.Uvarint(), r.Varint()
	if !r.Done() {
		return topicDedup{}, errBadRecord
	}
	return d, nil
}
