package pusher_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pusher"
)

// TestRetryAfterStormDeadLettersNothing: an endpoint that answers 429/503 with Retry-After
// many more times than maxReceiveCount loses nothing to the dead-letter queue: each throttle
// returns the batch uncounted after the wait it asked for (engine.CancelAfter).
func TestRetryAfterStormDeadLettersNothing(t *testing.T) {
	e := newEnv(t)
	dlq := e.queue("standard", nil)
	q := e.queue("standard", func(q *meta.Queue) { q.Redrive = &meta.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 2} })
	var round atomic.Int32
	ep := newEndpoint(t, false, func(w http.ResponseWriter, _ pushed) {
		if round.Load()%2 == 0 {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
		} else {
			w.Header().Set("Retry-After", e.clk.Now().Add(3*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	e.subscribe(q, ep.URL, nil)
	health := newAwaitedHealth()
	e.pusher(func(c *pusher.Config) { c.Health = health })
	msgs := e.send(q, "a", "b", "c")
	for storm := 0; storm < 6; storm++ { // three times maxReceiveCount
		round.Store(int32(storm))
		got := ep.next(t)
		for _, m := range got.body.Messages {
			if m.ReceiveCount != 1 {
				t.Fatalf("storm round %d: receiveCount %d, want 1 (throttles do not count)", storm, m.ReceiveCount)
			}
		}
		if a := e.attempt(q); a.Outcome != meta.AttemptThrottled {
			t.Fatalf("storm round %d: attempt %+v", storm, a)
		}
		if storm == 5 {
			ep.setRespond(status(200))
		}
		e.clk.Advance(3 * time.Second)
	}
	acked, attempts := 0, 6
	for acked < len(msgs) {
		got := ep.next(t)
		for _, m := range got.body.Messages {
			if m.ReceiveCount != 1 {
				t.Fatalf("after the storm: receiveCount %d, want 1", m.ReceiveCount)
			}
		}
		acked += len(got.body.Messages)
		e.attempt(q)
		attempts++
	}
	if st := e.stats(dlq); st.Visible+st.InFlight+st.Delayed != 0 {
		t.Fatalf("dead-letter queue holds %+v after a Retry-After storm", st)
	}
	health.await(t, attempts)
	h, err := health.Health(t.Context(), e.mustSub(q).ID)
	if err != nil || h.LastError == nil || h.LastSuccessAt.IsZero() || h.ConsecutiveFailures != 0 {
		t.Fatalf("health after the storm: %+v %v", h, err)
	}
	if ok, failed := h.Rate(e.clk.Now(), meta.HealthShortWindow); ok < 1 || failed != 6 {
		t.Fatalf("5-minute figures: %d ok, %d failed; want ≥ 1 and 6", ok, failed)
	}
}

// TestFailingEndpointDisabledAndResumed: a subscription whose every attempt has failed for its
// disableAfterSeconds is disabled (with a reason) and stops pushing, its message waiting in the
// queue; made active again (as the API's PATCH does), it pushes from a new failure window.
func TestFailingEndpointDisabledAndResumed(t *testing.T) {
	e := newEnv(t)
	q := e.queue("standard", nil)
	ep := newEndpoint(t, false, status(500))
	sub := e.subscribe(q, ep.URL, func(s *meta.Subscription) { s.DisableAfterSeconds = 3600 })
	health := newAwaitedHealth()
	p := e.pusher(func(c *pusher.Config) { c.Health = health })
	msg := e.send(q, "doomed")[0]
	start := e.clk.Now()
	attempts := 0
	for {
		ep.next(t)
		e.attempt(q)
		attempts++
		if e.clk.Now().Sub(start) >= time.Hour {
			break
		}
		if s := e.mustSub(q); s.Disabled {
			t.Fatalf("disabled after %s of failures, want 1h", e.clk.Now().Sub(start))
		}
		e.clk.Advance(10 * time.Minute) // past any backoff (at most 10 min)
	}
	e.applied(q, func(s meta.Subscription) bool { return s.Disabled })
	s := e.mustSub(q)
	if !s.Disabled || !strings.Contains(s.DisabledReason, "every push attempt failed for 1h0m0s") || !strings.Contains(s.DisabledReason, "status 500") {
		t.Fatalf("after an hour of failures: disabled %v, reason %q", s.Disabled, s.DisabledReason)
	}
	// Disabled: the message waits in the queue, visible, and is not pushed.
	e.clk.Advance(10 * time.Minute)
	p.Changed(q.ID)
	select {
	case got := <-ep.got:
		t.Fatalf("a disabled subscription pushed %d messages", len(got.body.Messages))
	case <-time.After(300 * time.Millisecond): // an absence cannot be awaited
	}
	if _, ok := e.browse(q, engine.StateVisible)[msg]; !ok {
		t.Fatal("the message of a disabled subscription does not wait visible in the queue")
	}
	// Resumed the way the API does it: active again, with a new failure window.
	ep.setRespond(status(200))
	if err := health.ResetHealthFailures(t.Context(), sub.ID); err != nil {
		t.Fatal(err)
	}
	e.update(p, sub, func(s *meta.Subscription) { s.Disabled, s.DisabledReason, s.DisabledAt = false, "", time.Time{} })
	got := ep.next(t)
	if len(got.body.Messages) != 1 || got.body.Messages[0].MessageID != msg.String() {
		t.Fatalf("after the resume pushed %+v", got.body.Messages)
	}
	if a := e.attempt(q); a.Outcome != meta.AttemptAcknowledged {
		t.Fatalf("after the resume: %+v", a)
	}
	health.await(t, attempts+1)
	h, err := health.Health(t.Context(), sub.ID)
	if err != nil || h.ConsecutiveFailures != 0 || h.LastSuccessAt.IsZero() || h.LastError == nil || h.LastError.Status != 500 {
		t.Fatalf("health after the resume: %+v %v", h, err)
	}
	if attempts < 7 {
		t.Fatalf("%d attempts before disabling, want one every 10 minutes for an hour", attempts)
	}
}

// awaitedHealth is the health log with a count of the outcomes written: the pusher writes
// them off the push path, after the attempt is logged, so a test awaits them before it reads.
type awaitedHealth struct {
	meta.HealthLog
	mu      sync.Mutex
	written int
	changed chan struct{} // closed and replaced at every write
}

func newAwaitedHealth() *awaitedHealth {
	return &awaitedHealth{HealthLog: memmeta.NewHealth(), changed: make(chan struct{})}
}

func (h *awaitedHealth) RecordHealth(ctx context.Context, sub ids.ID, os ...meta.HealthOutcome) (meta.Health, error) {
	rec, err := h.HealthLog.RecordHealth(ctx, sub, os...)
	h.mu.Lock()
	h.written += len(os)
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
	return rec, err
}

// await returns once n outcomes were written.
func (h *awaitedHealth) await(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		h.mu.Lock()
		written, changed := h.written, h.changed
		h.mu.Unlock()
		if written >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%d health outcomes written, want %d", written, n)
		}
	}
}
