package clock

import (
	"sync/atomic"
	"time"
)

// Skewed is a clock off from another by an offset that can change: a replica whose clock
// runs ahead or behind (fault tests).
type Skewed struct {
	base Clock
	off  atomic.Int64
}

// NewSkewed returns base shifted by off.
func NewSkewed(base Clock, off time.Duration) *Skewed {
	s := &Skewed{base: base}
	s.off.Store(int64(off))
	return s
}

// Now returns the base clock's time plus the offset.
func (s *Skewed) Now() time.Time { return s.base.Now().Add(time.Duration(s.off.Load())) }

// Set changes the offset (a clock jump).
func (s *Skewed) Set(off time.Duration) { s.off.Store(int64(off)) }

// WireFormat is how times go on the wire — API answers, push bodies: UTC, milliseconds, a Z.
const WireFormat = "2006-01-02T15:04:05.000Z"

// Wire formats t for the wire (WireFormat, in UTC).
func Wire(t time.Time) string { return t.UTC().Format(WireFormat) }
