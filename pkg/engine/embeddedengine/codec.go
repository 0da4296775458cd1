package embeddedengine

import (
	"encoding/binary"
	"errors"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/internal/wire"
	"github.com/queueshq/queues/pkg/ids"
)

// Record formats (all start with a version byte, 1).
//
//	state   (bucket "s", key queue id ‖ message id):
//	        uvarint seq, varint sentAt, varint expiresAt, varint at, varint receivedAt,
//	        uvarint attempt, string group id, [uvarint stored bytes (engine.PayloadBytes);
//	        absent in records written before: computed from the payload at start-up],
//	        [string conflation key: only while the message waits in the key index],
//	        [uvarint priority], [uvarint cancels × 2 + 1 when this attempt is cancelled],
//	        [uvarint attempt base: absent while 0, see msg.base], [uvarint flags: bit 0
//	        the message ends its group's binding (msg.endGroup); absent while 0]
//	payload (bucket "pq" ‖ queue id, one per queue, key message id; payloads.go says why
//	        and how bucket "p" of the earlier layout, keyed queue id ‖ message id, migrates):
//	        byte flags (bit 0: dead-letter info), string body,
//	        uvarint attribute count, per attribute (sorted): string name, string value,
//	        [dead-letter] 16 bytes source queue, string reason, varint at
//	queue   (bucket "q", key queue id): byte flags (bit 0: fifo), uvarint nextSeq,
//	        uvarint purgeSeq, varint lastPurge, [16 bytes project id (absent before)]
//	dedup   (bucket "d", key queue id ‖ dedup key): 16 bytes message id, varint expiresAt,
//	        [uvarint the message's sequence number (absent before)]
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

func encodeState(m *msg, ckey string) []byte {
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
	b = wire.AppendString(b, g)
	b = binary.AppendUvarint(b, uint64(m.size))
	// The key and the priority are optional tails (records before them end earlier); a
	// priority needs the key's place, empty when the message has none.
	// The cancels need the priority's place in turn, and the attempt base the cancels'.
	tail := m.endGroup // the flags, the last optional tail
	if ckey != "" || m.prio > 0 || m.cancels > 0 || m.base > 0 || tail {
		b = wire.AppendString(b, ckey)
	}
	if m.prio > 0 || m.cancels > 0 || m.base > 0 || tail {
		b = binary.AppendUvarint(b, uint64(m.prio))
	}
	if m.cancels > 0 || m.base > 0 || tail {
		c := uint64(m.cancels) * 2
		if m.cut {
			c++
		}
		b = binary.AppendUvarint(b, c)
	}
	if m.base > 0 || tail {
		b = binary.AppendUvarint(b, uint64(m.base))
	}
	if tail {
		b = binary.AppendUvarint(b, 1)
	}
	return b
}

func decodeState(b []byte, m *msg) (group, ckey string, err error) {
	r := wire.NewReader(b)
	if r.Byte() != recVersion {
		return "", "", errBadRecord
	}
	m.seq = r.Uvarint()
	m.sentAt = r.Varint()
	m.expiresAt = r.Varint()
	m.at = r.Varint()
	m.receivedAt = r.Varint()
	a := r.Uvarint()
	group = r.String()
	m.size = sizeUnknown
	if r.OK() && !r.Done() {
		sz := r.Uvarint()
		if sz >= sizeUnknown {
			return "", "", errBadRecord
		}
		m.size = uint32(sz)
		if r.OK() && !r.Done() {
			ckey = r.String()
		}
		if r.OK() && !r.Done() {
			p := r.Uvarint()
			if p > engine.MaxPriority {
				return "", "", errBadRecord
			}
			m.prio = uint8(p)
		}
		if r.OK() && !r.Done() {
			c := r.Uvarint()
			m.cancels, m.cut = uint32(min(c/2, uint64(^uint32(0)))), c%2 == 1
		}
		if r.OK() && !r.Done() {
			base := r.Uvarint()
			if base > uint64(^uint32(0)) {
				return "", "", errBadRecord
			}
			m.base = uint32(base)
		}
		if r.OK() && !r.Done() {
			fl := r.Uvarint()
			if fl&^1 != 0 {
				return "", "", errBadRecord
			}
			m.endGroup = fl&1 != 0
		}
	}
	if !r.Done() || a > uint64(^uint32(0)) || uint64(m.cancels) > a {
		return "", "", errBadRecord
	}
	m.attempt = uint32(a)
	return group, ckey, nil
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
	b = wire.AppendString(b, p.Body)
	b = wire.AppendAttributes(b, p.Attributes)
	if p.DeadLetter != nil {
		b = wire.AppendDeadLetter(b, p.DeadLetter)
	}
	return b
}

// decodeAttributes reads only the attributes of a stored payload: the body is skipped, not
// copied, so matching a filter costs the attributes' bytes, not the message's.
func decodeAttributes(b []byte) (map[string]string, error) {
	r := wire.NewReader(b)
	ver, flags := r.Byte(), r.Byte()
	if !r.OK() || ver != recVersion || flags&^1 != 0 {
		return nil, errBadRecord
	}
	r.Bytes(int(min(r.Uvarint(), uint64(len(b)+1)))) // the body, skipped
	attrs := r.Attributes()
	if !r.OK() {
		return nil, errBadRecord
	}
	return attrs, nil
}

func decodePayload(b []byte) (*payload, error) {
	r := wire.NewReader(b)
	ver, flags := r.Byte(), r.Byte()
	if !r.OK() || ver != recVersion || flags&^1 != 0 {
		return nil, errBadRecord
	}
	p := &payload{Body: r.String()}
	p.Attributes = r.Attributes()
	if flags&1 != 0 {
		p.DeadLetter = r.DeadLetter()
	}
	if !r.Done() {
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
	project   ids.ID // zero in records written before queues knew their project
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
	b = binary.AppendVarint(b, q.lastPurge)
	if !q.project.IsZero() {
		b = append(b, q.project[:]...)
	}
	return b
}

func decodeQueue(b []byte) (queueRec, error) {
	r := wire.NewReader(b)
	ver, flags := r.Byte(), r.Byte()
	rec := queueRec{fifo: flags&1 != 0, nextSeq: r.Uvarint(), purgeSeq: r.Uvarint(), lastPurge: r.Varint()}
	if r.OK() && !r.Done() {
		copy(rec.project[:], r.Bytes(16))
	}
	if !r.Done() || ver != recVersion {
		return queueRec{}, errBadRecord
	}
	return rec, nil
}

func encodeDedup(e dedupEntry) []byte {
	b := make([]byte, 0, 36)
	b = append(b, e.id[:]...)
	b = binary.AppendVarint(b, e.expiresAt)
	return binary.AppendUvarint(b, e.seq)
}

func decodeDedup(b []byte) (dedupEntry, error) {
	r := wire.NewReader(b)
	var e dedupEntry
	copy(e.id[:], r.Bytes(16))
	e.expiresAt = r.Varint()
	if r.OK() && !r.Done() { // records written before the sequence number was kept end here
		e.seq = r.Uvarint()
	}
	if !r.Done() {
		return dedupEntry{}, errBadRecord
	}
	return e, nil
}
