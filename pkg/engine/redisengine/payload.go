package redisengine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// payload is the immutable part of a stored message. Its encoding (version 1):
//
//	byte    version (1)
//	byte    flags (bit 0: dead-letter info follows the sequence number)
//	uvarint len, body
//	uvarint attribute count, then per attribute (sorted by name): uvarint len, name,
//	        uvarint len, value
//	uvarint len, group id ("" on standard queues)
//	uvarint sequence number (0 on standard queues)
//	[dead-letter] 16 bytes source queue id, uvarint len, reason, varint at (unix ms)
//
// Group id and sequence number are there so fifo queues can use the same format.
type payload struct {
	Body       string
	Attributes map[string]string
	GroupID    string
	Sequence   uint64
	DeadLetter *engine.DeadLetterInfo
}

const (
	payloadVersion  = 1
	flagDeadLetter  = 1
	maxPayloadBytes = 4 * engine.MaxMessageBytes // sanity bound when decoding
)

var errBadPayload = errors.New("malformed stored message")

func (p *payload) encode() []byte {
	size := 2 + len(p.Body) + len(p.GroupID) + 32
	for k, v := range p.Attributes {
		size += len(k) + len(v) + 6
	}
	b := make([]byte, 0, size)
	var flags byte
	if p.DeadLetter != nil {
		flags |= flagDeadLetter
	}
	b = append(b, payloadVersion, flags)
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
	b = appendString(b, p.GroupID)
	b = binary.AppendUvarint(b, p.Sequence)
	if d := p.DeadLetter; d != nil {
		b = append(b, d.SourceQueue[:]...)
		b = appendString(b, d.Reason)
		b = binary.AppendVarint(b, d.At.UnixMilli())
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodePayload is strict: any truncation, bad length or trailing byte is an error.
func decodePayload(s string) (*payload, error) {
	if len(s) > maxPayloadBytes {
		return nil, errBadPayload
	}
	r := reader{s: s}
	ver, flags := r.byte(), r.byte()
	if r.err != nil || ver != payloadVersion || flags&^flagDeadLetter != 0 {
		return nil, errBadPayload
	}
	p := &payload{Body: r.string()}
	n := r.uvarint()
	if n > engine.MaxAttributes*4 {
		return nil, errBadPayload
	}
	if n > 0 {
		p.Attributes = make(map[string]string, n)
		for range n {
			k := r.string()
			p.Attributes[k] = r.string()
		}
	}
	p.GroupID = r.string()
	p.Sequence = r.uvarint()
	if flags&flagDeadLetter != 0 {
		d := &engine.DeadLetterInfo{}
		copy(d.SourceQueue[:], r.bytes(16))
		d.Reason = r.string()
		d.At = time.UnixMilli(r.varint()).UTC()
		p.DeadLetter = d
	}
	if r.err != nil || r.off != len(s) {
		return nil, errBadPayload
	}
	return p, nil
}

type reader struct {
	s   string
	off int
	err error
}

func (r *reader) fail() { r.err = errBadPayload; r.off = len(r.s) }

func (r *reader) byte() byte {
	if r.err != nil || r.off >= len(r.s) {
		r.fail()
		return 0
	}
	r.off++
	return r.s[r.off-1]
}

func (r *reader) bytes(n int) string {
	if r.err != nil || n < 0 || len(r.s)-r.off < n {
		r.fail()
		return ""
	}
	r.off += n
	return r.s[r.off-n : r.off]
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint([]byte(r.s[r.off:min(len(r.s), r.off+binary.MaxVarintLen64)]))
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
	v, n := binary.Varint([]byte(r.s[r.off:min(len(r.s), r.off+binary.MaxVarintLen64)]))
	if n <= 0 {
		r.fail()
		return 0
	}
	r.off += n
	return v
}

func (r *reader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.s)) {
		r.fail()
		return ""
	}
	return r.bytes(int(n))
}

// state is a message's mutable state, stored as "attempt|receivedAtMs|expiresAtMs|sentAtMs".
type state struct {
	Attempt    uint32
	ReceivedAt int64
	ExpiresAt  int64
	SentAt     int64
}

func parseState(s string) (state, error) {
	parts := strings.Split(s, "|")
	if len(parts) != 4 {
		return state{}, fmt.Errorf("malformed message state %q", s)
	}
	var v [4]int64
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 {
			return state{}, fmt.Errorf("malformed message state %q", s)
		}
		v[i] = n
	}
	if v[0] > int64(^uint32(0)) {
		return state{}, fmt.Errorf("malformed message state %q", s)
	}
	return state{Attempt: uint32(v[0]), ReceivedAt: v[1], ExpiresAt: v[2], SentAt: v[3]}, nil
}

// outboxEntry is a message on its way to a dead-letter queue, as the source partition's
// scripts left it: "1|<atMs>|<sentAtMs>|<len(reason)>|" + reason + payload.
type outboxEntry struct {
	ID      ids.ID
	At      int64
	SentAt  int64
	Reason  string
	Payload string
}

func parseOutbox(id, v string) (outboxEntry, error) {
	mid, ok := ids.FromBytes([]byte(id))
	if !ok {
		return outboxEntry{}, errors.New("malformed outbox message id")
	}
	parts := strings.SplitN(v, "|", 5)
	if len(parts) != 5 || parts[0] != "1" {
		return outboxEntry{}, errors.New("malformed outbox entry")
	}
	at, err1 := strconv.ParseInt(parts[1], 10, 64)
	sent, err2 := strconv.ParseInt(parts[2], 10, 64)
	rlen, err3 := strconv.Atoi(parts[3])
	if err1 != nil || err2 != nil || err3 != nil || rlen < 0 || rlen > len(parts[4]) {
		return outboxEntry{}, errors.New("malformed outbox entry")
	}
	return outboxEntry{ID: mid, At: at, SentAt: sent, Reason: parts[4][:rlen], Payload: parts[4][rlen:]}, nil
}
