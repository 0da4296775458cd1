package redisengine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/internal/wire"
	"github.com/queueshq/queues/pkg/ids"
)

// payload is the immutable part of a stored message. Its encoding (version 1):
//
//	byte    version (1)
//	byte    flags (bit 0: dead-letter info follows the sequence number; bit 1: an attempt
//	        base ends the payload; bit 2: the message ends its fifo group's binding when
//	        settled, engine.Message.EndGroup)
//	uvarint len, body
//	uvarint attribute count, then per attribute (sorted by name): uvarint len, name,
//	        uvarint len, value
//	uvarint len, group id ("" on standard queues)
//	uvarint sequence number (0 on standard queues)
//	[dead-letter] 16 bytes source queue id, uvarint len, reason, varint at (unix ms)
//	[base]  4 bytes, big-endian: the attempt base
//
// The attempt base is set by the scripts that take a message out of its queue for a
// dead-letter or a move (prelude.lua: rebase), so that the message arrives in the next queue
// with its attempt field at its base: its delivery attempts, which handles name, never repeat,
// while its receiveCount (attempt - cancels - base) starts again at 0 (docs/redrive.md).
//
// Group id and sequence number are there so fifo queues can use the same format.
type payload struct {
	Body       string
	Attributes map[string]string
	GroupID    string
	Sequence   uint64
	DeadLetter *engine.DeadLetterInfo
	Base       uint32 // the attempt base; 0: none (the message never left a queue)
	EndGroup   bool   // engine.Message.EndGroup (flag bit 2; prelude.lua: pend)
}

const (
	payloadVersion  = 1
	flagDeadLetter  = 1
	flagBase        = 2
	flagEndGroup    = 4
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
	if p.Base > 0 {
		flags |= flagBase
	}
	if p.EndGroup {
		flags |= flagEndGroup
	}
	b = append(b, payloadVersion, flags)
	b = wire.AppendString(b, p.Body)
	b = wire.AppendAttributes(b, p.Attributes)
	b = wire.AppendString(b, p.GroupID)
	b = binary.AppendUvarint(b, p.Sequence)
	if p.DeadLetter != nil {
		b = wire.AppendDeadLetter(b, p.DeadLetter)
	}
	if p.Base > 0 {
		b = binary.BigEndian.AppendUint32(b, p.Base)
	}
	return b
}

// arriving gives an outbox entry's payload the attempt base it arrives with. The scripts
// that write entries set one (prelude.lua: rebase); an entry left by a version before bases
// has none, and its message's attempts are unknown, so its base jumps by engine.DeliveryJump.
func (p *payload) arriving() {
	if p.Base == 0 {
		p.Base = engine.DeliveryJump
	}
}

// decodePayload is strict: any truncation, bad length or trailing byte is an error.
func decodePayload(s string) (*payload, error) {
	if len(s) > maxPayloadBytes {
		return nil, errBadPayload
	}
	r := wire.NewReader(s)
	ver, flags := r.Byte(), r.Byte()
	if !r.OK() || ver != payloadVersion || flags&^(flagDeadLetter|flagBase|flagEndGroup) != 0 {
		return nil, errBadPayload
	}
	p := &payload{Body: r.String(), EndGroup: flags&flagEndGroup != 0}
	p.Attributes = r.Attributes()
	p.GroupID = r.String()
	p.Sequence = r.Uvarint()
	if flags&flagDeadLetter != 0 {
		p.DeadLetter = r.DeadLetter()
	}
	if flags&flagBase != 0 {
		if b := r.Bytes(4); len(b) == 4 {
			p.Base = binary.BigEndian.Uint32([]byte(b))
		}
	}
	if !r.Done() {
		return nil, errBadPayload
	}
	return p, nil
}

// state is a message's mutable state, stored as "attempt|receivedAtMs|expiresAtMs|sentAtMs",
// the attempt field "attempt:cancels" (and a trailing '*' while that attempt stands
// cancelled) once a delivery was cancelled (scripts/prelude.lua).
type state struct {
	Attempt    uint32
	Cancels    uint32
	ReceivedAt int64
	ExpiresAt  int64
	SentAt     int64
}

// ReceiveCount is the receives that count in the message's present queue: cancelled
// deliveries do not (docs/delivery-options.md#cancel), nor the attempts before its attempt base
// (its payload's Base: the attempts of the queues it left by a dead-letter or a move).
func (s state) ReceiveCount(base uint32) int {
	return max(int(s.Attempt)-int(s.Cancels)-int(base), 0)
}

func parseState(s string) (state, error) {
	parts := strings.Split(s, "|")
	if len(parts) != 4 {
		return state{}, fmt.Errorf("malformed message state %q", s)
	}
	var cancels int64
	if a, c, ok := strings.Cut(parts[0], ":"); ok {
		n, err := strconv.ParseInt(strings.TrimSuffix(c, "*"), 10, 32)
		if err != nil || n < 0 {
			return state{}, fmt.Errorf("malformed message state %q", s)
		}
		parts[0], cancels = a, n
	}
	var v [4]int64
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 {
			return state{}, fmt.Errorf("malformed message state %q", s)
		}
		v[i] = n
	}
	if v[0] > int64(^uint32(0)) || cancels > v[0] {
		return state{}, fmt.Errorf("malformed message state %q", s)
	}
	return state{Attempt: uint32(v[0]), Cancels: uint32(cancels), ReceivedAt: v[1], ExpiresAt: v[2], SentAt: v[3]}, nil
}

// splitValue splits an m value ("attempt|receivedAtMs|expiresAtMs|sentAtMs|" + payload) into
// its state and payload; a value without four separators is all state (parseState refuses it).
func splitValue(v string) (state, payload string) {
	at := 0
	for range 4 {
		i := strings.IndexByte(v[at:], '|')
		if i < 0 {
			return v, ""
		}
		at += i + 1
	}
	return v[:at-1], v[at:]
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

// listed is an element of a partition's list l: id (16 raw bytes) + "sentAtMs|expiresAtMs|"
// + payload (see keys.go).
type listed struct {
	ID        ids.ID
	SentAt    int64
	ExpiresAt int64
	Payload   string
}

func parseListed(v string) (listed, error) {
	bad := errors.New("malformed list element")
	if len(v) < 16 {
		return listed{}, bad
	}
	id, _ := ids.FromBytes([]byte(v[:16]))
	parts := strings.SplitN(v[16:], "|", 3)
	if len(parts) != 3 {
		return listed{ID: id}, bad
	}
	sa, err1 := strconv.ParseInt(parts[0], 10, 64)
	ea, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || sa < 0 || ea < 0 {
		return listed{ID: id}, bad
	}
	return listed{ID: id, SentAt: sa, ExpiresAt: ea, Payload: parts[2]}, nil
}
