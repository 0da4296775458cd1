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
