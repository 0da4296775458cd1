package pusher

import (
	"time"
)

// bucket is a token bucket on the injected clock (Config.Clock), so tests move a fake clock
// instead of waiting: it refills rate tokens a second and holds at most one second's worth
// (and at least one batch's). A push of n messages needs min(n, capacity) tokens and takes
// n: a batch larger than the capacity still goes, and the debt it leaves keeps the long-run
// rate. The zero bucket (rate 0) bounds nothing.
type bucket struct {
	rate     float64 // tokens a second; 0: no bound
	capacity float64
	tokens   float64
	at       time.Time // when tokens was last brought up to date
}

// set applies a rate (messages a second, 0: none) and the batch size, keeping the tokens
// saved so far within the new capacity. A new bucket starts full.
func (b *bucket) set(rate, batch int, now time.Time) {
	r, c := float64(rate), float64(max(rate, batch, 1))
	if r == b.rate && c == b.capacity {
		return
	}
	if b.rate == 0 {
		b.tokens, b.at = c, now
	}
	b.rate, b.capacity = r, c
	b.tokens = min(b.tokens, c)
}

func (b *bucket) refill(now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(b.tokens+d.Seconds()*b.rate, b.capacity)
		b.at = now
	}
}

// wait returns how long until a push of n messages may go (0: now).
func (b *bucket) wait(now time.Time, n int) time.Duration {
	if b.rate == 0 {
		return 0
	}
	b.refill(now)
	need := min(float64(n), b.capacity)
	if b.tokens >= need {
		return 0
	}
	return max(time.Duration((need-b.tokens)/b.rate*float64(time.Second)), time.Millisecond)
}

// take records a push of n messages.
func (b *bucket) take(now time.Time, n int) {
	if b.rate == 0 {
		return
	}
	b.refill(now)
	b.tokens -= float64(n)
}

// full reports whether the bucket saved its whole capacity (so forgetting it loses nothing).
func (b *bucket) full(now time.Time) bool {
	if b.rate == 0 {
		return true
	}
	b.refill(now)
	return b.tokens >= b.capacity
}

// rateRecheck bounds a wait for tokens measured on the injected clock: a fake clock moved by
// a test is seen within it, and on the real clock it only costs a few wake-ups.
const rateRecheck = 100 * time.Millisecond
