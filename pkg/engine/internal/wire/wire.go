// Package wire holds the pieces the embedded and Redis engines' stored records have in
// common: uvarint-length-prefixed strings, sorted attribute maps, dead-letter info and a
// strict reader for them. The two engines' record layouts differ; each lays its own out
// from these pieces.
//
//	string      uvarint len, bytes
//	attributes  uvarint count, then per attribute (sorted by name): string name, string value
//	dead letter 16 bytes source queue id, string reason, varint at (unix ms)
package wire

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// AppendString appends s as a uvarint length and its bytes.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendAttributes appends the attribute count and each attribute, sorted by name.
func AppendAttributes(b []byte, attrs map[string]string) []byte {
	names := make([]string, 0, len(attrs))
	for k := range attrs {
		names = append(names, k)
	}
	slices.Sort(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, k := range names {
		b = AppendString(b, k)
		b = AppendString(b, attrs[k])
	}
	return b
}

// AppendDeadLetter appends d's source queue, reason and time.
func AppendDeadLetter(b []byte, d *engine.DeadLetterInfo) []byte {
	b = append(b, d.SourceQueue[:]...)
	b = AppendString(b, d.Reason)
	return binary.AppendVarint(b, d.At.UnixMilli())
}

// Reader reads a record held as a string or a byte slice. Once a read fails (truncation,
// bad varint, length past the end) every later read returns a zero value and OK is false.
type Reader[S string | []byte] struct {
	s      S
	off    int
	failed bool
}

// NewReader returns a reader at the start of s.
func NewReader[S string | []byte](s S) Reader[S] { return Reader[S]{s: s} }

// OK reports whether every read so far succeeded.
func (r *Reader[S]) OK() bool { return !r.failed }

// Done reports whether every read so far succeeded and consumed the whole record.
func (r *Reader[S]) Done() bool { return !r.failed && r.off == len(r.s) }

func (r *Reader[S]) fail() { r.failed = true; r.off = len(r.s) }

// Byte reads one byte.
func (r *Reader[S]) Byte() byte {
	if r.failed || r.off >= len(r.s) {
		r.fail()
		return 0
	}
	r.off++
	return r.s[r.off-1]
}

// Bytes reads the next n bytes (sharing memory with the record).
func (r *Reader[S]) Bytes(n int) S {
	if r.failed || n < 0 || len(r.s)-r.off < n {
		r.fail()
		var zero S
		return zero
	}
	r.off += n
	return r.s[r.off-n : r.off]
}

// Uvarint reads an unsigned varint.
func (r *Reader[S]) Uvarint() uint64 {
	if r.failed {
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

// Varint reads a signed varint.
func (r *Reader[S]) Varint() int64 {
	if r.failed {
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

// String reads a uvarint length and that many bytes.
func (r *Reader[S]) String() string {
	n := r.Uvarint()
	if n > uint64(len(r.s)) {
		r.fail()
		return ""
	}
	return string(r.Bytes(int(n)))
}

// Attributes reads what AppendAttributes wrote: nil for none. More than
// engine.MaxAttributes*4 attributes is a failed read.
func (r *Reader[S]) Attributes() map[string]string {
	n := r.Uvarint()
	if n > engine.MaxAttributes*4 {
		r.fail()
		return nil
	}
	if n == 0 {
		return nil
	}
	attrs := make(map[string]string, n)
	for range n {
		k := r.String()
		attrs[k] = r.String()
	}
	return attrs
}

// DeadLetter reads what AppendDeadLetter wrote; the time is in UTC.
func (r *Reader[S]) DeadLetter() *engine.DeadLetterInfo {
	d := &engine.DeadLetterInfo{}
	copy(d.SourceQueue[:], r.Bytes(16))
	d.Reason = r.String()
	d.At = time.UnixMilli(r.Varint()).UTC()
	return d
}
