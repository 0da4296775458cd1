package embeddedengine

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Record formats (all start with a version byte, 1).
//
//	state   (bucket "s", key queue id ‖ message id):
//	        uvarint seq, varint sentAt, varint expiresAt, varint at, varint receivedAt,
//	        uvarint attempt, string group id
//	payload (bucket "p", same key): byte flags (bit 0: dead-letter info), string body,
//	        uvarint attribute count, per attribute (sorted): string name, string value,
//	        [dead-letter] 16 bytes source queue, string reason, varint at
//	queue   (bucket "q", key queue id): byte flags (bit 0: fifo), uvarint nextSeq,
//	        uvarint purgeSeq, varint lastPurge
//	dedup   (bucket "d", key queue id ‖ dedup key): 16 bytes message id, varint expiresAt
//
// Strings are a uvarint length and the bytes; times are unix milliseconds.

const recVersion = 1

var errBadRecord = errors.New("embeddedengine: malformed stored record")

func key(q, m ids.ID) []byte {
	k := make([]byte, 32)
	copy(k, q[:])
	copy(k[16:], m[:])
	return k
}

func dedupKey(q ids.ID, k string) []byte {
	b := make([]byte, 0, 16+len(k))
	b = append(b, q[:]...)
	return append(b, k...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func encodeState(m *msg) []byte {
	b := make([]byte, 0, 48)
	b = append(b, recVersion)
	b = binary.AppendUvarint(b, m.seq)
	b = binary.AppendVarint(b, m.sentAt)
	b = binary.AppendVarint(b, m.expiresAt)
	b = binary.AppendVarint(b, m.at)
	b = binary.AppendVarint(b, m.receivedAt)
	b = binary.AppendUvarint(b, uint64(m.attempt))
	g := ""
	if m.g != nil {
		g = m.g.id
	}
	return appendString(b, g)
}

func decodeState(b []byte, m *msg) (group string, err error) {
	r := reader{b: b}
	if r.byte() != recVersion {
		return "", errBadRecord
	}
	m.seq = r.uvarint()
	m.sentAt = r.varint()
	m.expiresAt = r.varint()
	m.at = r.varint()
	m.receivedAt = r.varint()
	a := r.uvarint()
	group = r.string()
	if r.err != nil || r.off != len(b) || a > uint64(^uint32(0)) {
		return "", errBadRecord
	}
	m.attempt = uint32(a)
	return group, nil
}

// payload is a message's immutable part.
type payload struct {
	Body       string
	Attributes map[string]string
	DeadLetter *engine.DeadLetterInfo
}

func encodePayload(p *payload) []byte {
	size := 24 + len(p.Body)
	for k, v := range p.Attributes {
		size += len(k) + len(v) + 4
	}
	b := make([]byte, 0, size)
	var flags byte
	if p.DeadLetter != nil {
		flags = 1
	}
	b = append(b, recVersion, flags)
	b = appendString(b, p.Body)
	names := make([]string, 0, len(p.Attributes))
	for k := range p.Attributes {
		names = append(names, k)
	}
	slices.Sort(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, k := range names {
		b = appendString(b, k)
		b = appendString(b, p.Attributes[k])
	}
	if d := p.DeadLetter; d != nil {
		b = append(b, d.SourceQueue[:]...)
		b = appendString(b, d.Reason)
		b = binary.AppendVarint(b, d.At.UnixMilli())
	}
	return b
}

func decodePayload(b []byte) (*payload, error) {
	r := reader{b: b}
	ver, flags := r.byte(), r.byte()
	if r.err != nil || ver != recVersion || flags&^1 != 0 {
		return nil, errBadRecord
	}
	p := &payload{Body: r.string()}
	n := r.uvarint()
	if n > engine.MaxAttributes*4 {
		return nil, errBadRecord
	}
	if n > 0 {
		p.Attributes = make(map[string]string, n)
		for range n {
			k := r.string()
			p.Attributes[k] = r.string()
		}
	}
	if flags&1 != 0 {
		d := &engine.DeadLetterInfo{}
		copy(d.SourceQueue[:], r.bytes(16))
		d.Reason = r.string()
		d.At = time.UnixMilli(r.varint()).UTC()
		p.DeadLetter = d
	}
	if r.err != nil || r.off != len(b) {
		return nil, errBadRecord
	}
	return p, nil
}

// queueRec is a queue's durable counters.
type queueRec struct {
	fifo      bool
	nextSeq   uint64
	purgeSeq  uint64
	lastPurge int64
}

func encodeQueue(q *queue) []byte {
	b := make([]byte, 0, 32)
	var flags byte
	if q.fifo {
		flags = 1
	}
	b = append(b, recVersion, flags)
	b = binary.AppendUvarint(b, q.nextSeq)
	b = binary.AppendUvarint(b, q.purgeSeq)
	return binary.AppendVarint(b, q.lastPurge)
}

func decodeQueue(b []byte) (queueRec, error) {
	r := reader{b: b}
	ver, flags := r.byte(), r.byte()
	rec := queueRec{fifo: flags&1 != 0, nextSeq: r.uvarint(), purgeSeq: r.uvarint(), lastPurge: r.varint()}
	if r.err != nil || ver != recVersion || r.off != len(b) {
		return queueRec{}, errBadRecord
	}
	return rec, nil
}

func encodeDedup(e dedupEntry) []byte {
	b := make([]byte, 0, 26)
	b = append(b, e.id[:]...)
	return binary.AppendVarint(b, e.expiresAt)
}

func decodeDedup(b []byte) (dedupEntry, error) {
	r := reader{b: b}
	var e dedupEntry
	copy(e.id[:], r.bytes(16))
	e.expiresAt = r.varint()
	if r.err != nil || r.off != len(b) {
		return dedupEntry{}, errBadRecord
	}
	return e, nil
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail() { r.err = errBadRecord; r.off = len(r.b) }

func (r *reader) byte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.fail()
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || len(r.b)-r.off < n {
		r.fail()
		return nil
	}
	r.off += n
	return r.b[r.off-n : r.off]
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.off += n
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.off += n
	return v
}

func (r *reader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return ""
	}
	return string(r.bytes(int(n)))
}
