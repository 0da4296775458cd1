package pusher

// Endpoint health (issue 37): every settled attempt is counted in the health log the API
// reads; a subscription whose every attempt has failed for its disableAfterSeconds is
// disabled; a throttle (429/503 with Retry-After) holds the subscription's pushes until the
// wait the endpoint asked for has passed.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// healthQueue holds a worker's outcomes not yet in the health log. One writer at a time
// drains it, so the log counts them in the order the pushes were answered (an older outcome
// never clears a newer throttle or failure window), and no push holds its slot while the
// log is written: the outcomes of the pushes answered during one write go in the next.
type healthQueue struct {
	mu      sync.Mutex
	pending []pendingOutcome
	writing bool
}

type pendingOutcome struct {
	sub meta.Subscription
	o   meta.HealthOutcome
}

// add queues an outcome and reports whether the caller must start the writer.
func (q *healthQueue) add(sub meta.Subscription, o meta.HealthOutcome) (start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending, pendingOutcome{sub: sub, o: o})
	start = !q.writing
	q.writing = true
	return start
}

// take hands the writer what is queued; none (and the writer stops) when nothing is.
func (q *healthQueue) take() []pendingOutcome {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.pending
	q.pending = nil
	if len(out) == 0 {
		q.writing = false
	}
	return out
}

// recordHealth counts the attempt: the throttle and the failing gauge at once, the health
// log (and disabling) by the worker's health writer. flow is the attempt's flow-control
// signal (the limit after it is recorded).
func (w *worker) recordHealth(sub meta.Subscription, v verdict, status int, flow flowResult, now time.Time) {
	p := w.p
	o := meta.HealthOutcome{At: now, Status: status, FlowLimit: w.flow.after(flow)}
	switch v.Kind {
	case ackAll, deferAll, perMessage:
		o.OK = true
	default:
		o.Error, o.Message = v.ErrClass, v.Detail
	}
	if v.Kind == throttled {
		o.ThrottledUntil = now.Add(v.RetryAfter)
		w.holdUntil(o.ThrottledUntil)
	}
	if w.failing.Swap(!o.OK) != !o.OK {
		p.countHealth()
	}
	if w.health.add(sub, o) {
		w.inFlight.Add(1) // within a push in flight: the count is above zero
		go w.writeHealth()
	}
}

// writeHealth drains the worker's health queue, each round's outcomes in one write. A worker
// pushes for one subscription id (a subscription made again gets a new worker), so a round's
// outcomes are all of one record.
func (w *worker) writeHealth() {
	defer w.inFlight.Done()
	for batch := w.health.take(); len(batch) > 0; batch = w.health.take() {
		w.writeOutcomes(batch)
	}
}

// writeOutcomes records the outcomes and disables the subscription when the last one ends a
// long enough failure.
func (w *worker) writeOutcomes(batch []pendingOutcome) {
	p := w.p
	os := make([]meta.HealthOutcome, len(batch))
	for i, b := range batch {
		os[i] = b.o
	}
	last := batch[len(batch)-1]
	ctx, cancel := context.WithTimeout(p.ioCtx, 5*time.Second)
	defer cancel()
	h, err := p.cfg.Health.RecordHealth(ctx, last.sub.ID, os...)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("recording push outcomes' health failed", "queue", w.qid.String(), "outcomes", len(os), "err", err)
		}
		return
	}
	sub, now := last.sub, last.o.At
	after := time.Duration(sub.DisableAfterSeconds) * time.Second
	if !last.o.OK && !sub.Disabled && after > 0 && h.FailingFor(now) >= after {
		w.disable(ctx, sub.ID, h, now)
	}
}

// disable marks the subscription disabled in the store and applies it here at once: the
// worker stops pushing; its messages wait in the queue until a PATCH makes it active.
func (w *worker) disable(ctx context.Context, id ids.ID, h meta.Health, now time.Time) {
	p := w.p
	reason := fmt.Sprintf("every push attempt failed for %s (%d attempts since %s)",
		now.Sub(h.FailingSince).Round(time.Second), h.ConsecutiveFailures, formatTime(h.FailingSince))
	if e := h.LastError; e != nil {
		reason += "; last error: " + truncate(e.Message, 200)
	}
	for range 5 {
		s, err := p.cfg.Store.GetSubscription(ctx, w.qid)
		if err != nil || s.ID != id || s.Disabled {
			return // gone, replaced, or disabled already
		}
		s.Disabled, s.DisabledReason, s.DisabledAt = true, reason, now.UTC().Truncate(time.Millisecond)
		s.UpdatedAt = s.DisabledAt
		out, err := p.cfg.Store.UpdateSubscription(ctx, s)
		if errors.Is(err, meta.ErrSubscriptionConflict) {
			continue
		}
		if err != nil {
			p.log.Warn("disabling a failing subscription failed", "queue", w.qid.String(), "err", err)
			return
		}
		p.m.disabled.Inc()
		p.log.Warn("push subscription disabled", "queue", w.qid.String(), "reason", reason)
		w.apply(ctx, out, false)
		p.countHealth()
		return
	}
}

// holdUntil makes the worker start no push before t (a throttle's Retry-After).
func (w *worker) holdUntil(t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t.After(w.hold) {
		w.hold = t
	}
}

// held is how long the worker must still wait before its next push.
func (w *worker) held() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hold.Sub(w.p.cfg.Clock.Now())
}

// countHealth sets the gauges of held subscriptions that are disabled or failing.
func (p *Pusher) countHealth() {
	p.mu.Lock()
	defer p.mu.Unlock()
	disabled, failing := 0, 0
	for _, w := range p.workers {
		sub, _, _ := w.snapshot()
		if sub.Disabled {
			disabled++
		}
		if w.failing.Load() {
			failing++
		}
	}
	p.m.disabledNow.Set(float64(disabled))
	p.m.failingNow.Set(float64(failing))
}
