package api

import (
	"net/netip"
	"sync"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
)

// ForgedHandleLimit bounds how many invalid receipt handles (answers receipt_handle_invalid)
// one source may present: the receipt routes need no credential, so this is what stops one
// address from probing for handles at no cost. A source over it gets 429 rate_limited for
// each invalid handle it presents until its bucket refills; valid handles cost nothing and are
// always served, so one caller's forgeries never refuse another's settlements behind a
// shared address.
type ForgedHandleLimit struct {
	PerSecond float64 // refill rate (default 20)
	Burst     int     // bucket size (default 200)
	// MaxSources bounds the memory: at most this many sources are tracked (default 50,000,
	// about 5 MB). When full, only sources whose bucket has refilled are forgotten (they are
	// as if never seen); while none has, new sources share one overflow bucket, so rotating
	// sources never resets the count of a source over its budget.
	MaxSources int
}

// DefaultForgedHandleLimit is the limit when the Config leaves it zero.
var DefaultForgedHandleLimit = ForgedHandleLimit{PerSecond: 20, Burst: 200, MaxSources: 50_000}

// sourceBuckets is an in-process token bucket per source. Every replica keeps its own: a
// forger spread over replicas gets one burst per replica, which is still bounded.
type sourceBuckets struct {
	lim ForgedHandleLimit
	now func() time.Time
	mu  sync.Mutex
	m   map[netip.Addr]*bucket
	// overflow is the bucket of the sources not tracked while the table is full.
	overflow bucket
	// swept is when the full table was last swept for refilled buckets: at most once a
	// second, so a stream of new sources does not cost a sweep of the table each.
	swept time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newSourceBuckets(lim ForgedHandleLimit, now func() time.Time) *sourceBuckets {
	d := DefaultForgedHandleLimit
	if lim.PerSecond <= 0 {
		lim.PerSecond = d.PerSecond
	}
	if lim.Burst <= 0 {
		lim.Burst = d.Burst
	}
	if lim.MaxSources <= 0 {
		lim.MaxSources = d.MaxSources
	}
	return &sourceBuckets{lim: lim, now: now, m: map[netip.Addr]*bucket{}, overflow: bucket{tokens: float64(lim.Burst), at: now()}}
}

// refill brings b up to now; the caller holds mu.
func (l *sourceBuckets) refill(b *bucket, now time.Time) {
	b.tokens = min(float64(l.lim.Burst), b.tokens+now.Sub(b.at).Seconds()*l.lim.PerSecond)
	b.at = now
}

// wait is how long src must wait before presenting another handle (0: go ahead).
func (l *sourceBuckets) wait(src netip.Addr) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[src]
	if !ok {
		if len(l.m) < l.lim.MaxSources {
			return 0
		}
		b = &l.overflow
	}
	l.refill(b, l.now())
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / l.lim.PerSecond * float64(time.Second))
}

// charge takes n tokens from src's bucket (it may go negative: a big batch of forgeries
// earns a longer wait).
func (l *sourceBuckets) charge(src netip.Addr, n int) {
	if n == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.m[src]
	if !ok {
		if len(l.m) >= l.lim.MaxSources && now.Sub(l.swept) >= time.Second {
			l.swept = now
			l.evict(now)
		}
		if len(l.m) < l.lim.MaxSources {
			b = &bucket{tokens: float64(l.lim.Burst), at: now}
			l.m[src] = b
		} else {
			b = &l.overflow
		}
	}
	l.refill(b, now)
	b.tokens -= float64(n)
}

// evict forgets the sources whose bucket has refilled (they are as if never seen). A source
// still waiting is kept whatever the spread of other sources: wiping the table would let a
// forger reset its own count by rotating addresses.
func (l *sourceBuckets) evict(now time.Time) {
	for k, b := range l.m {
		if l.refill(b, now); b.tokens >= float64(l.lim.Burst) {
			delete(l.m, k)
		}
	}
}

// staleGeneration is how many stale deliveries each of the two generations of staleHandles
// holds (about 2 MB each at most).
const staleGeneration = 16_384

// staleHandles remembers deliveries proven stale (a delivery never becomes current again: its
// attempt is never repeated), so a stale handle presented again costs no storage and none of
// its project's budget. Two generations bound the memory: when the current one is full, the
// older is dropped.
type staleHandles struct {
	mu       sync.Mutex
	cur, old map[engine.Delivery]struct{}
}

func (h *staleHandles) add(d engine.Delivery) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.cur) >= staleGeneration || h.cur == nil {
		h.old, h.cur = h.cur, make(map[engine.Delivery]struct{}, 64)
	}
	h.cur[d] = struct{}{}
}

func (h *staleHandles) has(d engine.Delivery) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, inCur := h.cur[d]
	_, inOld := h.old[d]
	return inCur || inOld
}

// limited is the answer to an invalid handle from a source over its forged-handle budget.
func limited(wait time.Duration) *apierr.Error {
	return apierr.New(apierr.RateLimited, "too many invalid receipt handles from this address; retry later").WithRetryAfter(wait)
}

// overBudget turns an invalid (or known stale) handle's error into 429 rate_limited when its
// source must wait (wait > 0); any other answer, a valid handle's above all, is left as it is.
func overBudget(e *apierr.Error, wait time.Duration) *apierr.Error {
	if wait > 0 && e != nil && (e.Code == apierr.ReceiptHandleInvalid || e.Code == apierr.ReceiptHandleStale) {
		return limited(wait)
	}
	return e
}

// chargeSource counts the invalid handles of a receipt call against its source. A source
// already waiting (wait > 0) is refused them, not charged: its bucket refills at the set rate.
func (s *Server) chargeSource(src netip.Addr, wait time.Duration, errs ...*apierr.Error) {
	if wait > 0 {
		return
	}
	n := 0
	for _, e := range errs {
		if e != nil && (e.Code == apierr.ReceiptHandleInvalid || e.Code == apierr.ReceiptHandleStale) {
			n++
		}
	}
	s.forged.charge(src, n)
}
