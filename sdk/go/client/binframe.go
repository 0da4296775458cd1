package client

import (
	"encoding/binary"
	"errors"
	"time"
)

// The receive stream's binary batches (StreamOptions.Binary; docs/streaming.md "Binary
// batches"), read without reflection. The layout is the service's (pkg/api/binframe.go).

// errBinaryFrame is a binary frame this reader does not follow.
var errBinaryFrame = errors.New("queues: a malformed binary stream frame")

// binReader reads a binary frame front to back; the first fault sticks.
type binReader struct {
	b   []byte
	bad bool
}

func (r *binReader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *binReader) byte() byte {
	if r.bad || len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *binReader) str() string {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// time reads a time string ("" is the zero time).
func (r *binReader) time() time.Time {
	s := r.str()
	if s == "" || r.bad {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		r.bad = true
	}
	return t
}

// decodeBinaryBatch reads a binary batch frame into its messages.
func decodeBinaryBatch(b []byte) ([]Message, error) {
	r := &binReader{b: b}
	if r.byte() != 0x01 {
		return nil, errBinaryFrame
	}
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)) { // every message takes more than a byte
		return nil, errBinaryFrame
	}
	msgs := make([]Message, n)
	for i := range msgs {
		m := &msgs[i]
		m.MessageID, m.Body, m.ReceiptHandle = r.str(), r.str(), r.str()
		m.SentAt, m.VisibilityDeadline = r.time(), r.time()
		m.GroupID, m.SequenceNumber, m.Traceparent = r.str(), r.str(), r.str()
		m.ReceiveCount = int(r.uvarint())
		if p := r.byte(); p != 0xff {
			m.Priority = int(p)
		}
		na := r.uvarint()
		if na > uint64(len(r.b)) {
			return nil, errBinaryFrame
		}
		m.Attributes = make(map[string]string, na)
		for range na {
			k := r.str()
			m.Attributes[k] = r.str()
		}
		flags := r.byte()
		if flags&1 != 0 {
			m.DeadLetter = &DeadLetterInfo{SourceQueue: r.str(), Reason: r.str(), At: r.time()}
		}
		if flags&2 != 0 {
			m.ReplayOf = &ReplayOf{Topic: r.str(), Sequence: r.uvarint()}
		}
		if r.bad {
			return nil, errBinaryFrame
		}
	}
	if len(r.b) != 0 {
		return nil, errBinaryFrame
	}
	return msgs, nil
}
