package fanout

import (
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Backoff of one binding whose copies fail.
const (
	minBindingBackoff = 50 * time.Millisecond
	maxBindingBackoff = 30 * time.Second
)

// retry is a binding whose last round failed (its queue's storage, its queue's settings, an
// unreadable filter): it sits the rounds out until until, so that one failing queue does not
// hold back its topic's other bindings — the log is read from the smallest cursor of the
// bindings taking part, and a binding stuck there would stop every other one.
type retry struct {
	until time.Time
	delay time.Duration
}

// ready are the bindings of bs not waiting out a failure at now.
func (h *holder) ready(bs []engine.Binding, now time.Time) []engine.Binding {
	if len(h.retries) == 0 {
		return bs
	}
	out := make([]engine.Binding, 0, len(bs))
	for _, b := range bs {
		if rt, ok := h.retries[b.ID]; ok && now.Before(rt.until) {
			continue
		}
		out = append(out, b)
	}
	return out
}

// failed makes binding sit out the rounds for twice as long as after its last failure.
func (h *holder) failed(binding ids.ID, now time.Time) {
	rt := h.retries[binding]
	rt.delay = min(max(2*rt.delay, minBindingBackoff), maxBindingBackoff)
	rt.until = now.Add(rt.delay)
	h.retries[binding] = rt
}

// nextRetry is how long until the first waiting binding may take part again (false: none
// waits).
func (h *holder) nextRetry(now time.Time) (time.Duration, bool) {
	var next time.Duration
	found := false
	for id, rt := range h.retries {
		d := max(rt.until.Sub(now), 0)
		if !found || d < next {
			next, found = d, true
		}
		if rt.until.Before(now.Add(-maxBindingBackoff)) {
			delete(h.retries, id) // long gone (unbound) or long recovered without a round
		}
	}
	return next, found
}
