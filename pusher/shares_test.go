package pusher_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pusher"
)

// TestSlowEndpointsHoldOnlyTheirShare (SPEC §10): project A's three subscriptions push to an
// endpoint that never answers, each allowed 10 batches in flight; project B's pushes to a
// healthy one. With a replica-wide bound of 8 batches, A holds at most its subscriptions'
// shares — the endpoint never sees more at once — and every one of B's messages is pushed and
// acknowledged while A's pushes are still stuck.
func TestSlowEndpointsHoldOnlyTheirShare(t *testing.T) {
	e := newEnv(t)
	stuck := make(chan struct{})
	var held, most atomic.Int64
	slow := newEndpoint(t, false, func(w http.ResponseWriter, p pushed) {
		n := held.Add(1)
		defer held.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-stuck:
		case <-p.ctx.Done():
		}
	})
	fast := newEndpoint(t, false, status(http.StatusNoContent))
	for range 3 {
		q := e.queue("standard", nil)
		e.subscribe(q, slow.URL, func(s *meta.Subscription) { s.BatchSize, s.MaxInFlight, s.TimeoutSeconds = 1, 10, 60 })
		e.send(q, "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11", "a12")
	}
	other := meta.Project{ID: ids.New(), Name: "b", CreatedAt: e.clk.Now()}
	if err := e.store.CreateProject(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	qb := e.queue("standard", func(q *meta.Queue) { q.ProjectID = other.ID })
	e.subscribe(qb, fast.URL, func(s *meta.Subscription) { s.BatchSize, s.MaxInFlight = 1, 10 })
	p := e.pusher(func(c *pusher.Config) { c.MaxInFlight = 8 })
	t.Cleanup(func() { close(stuck) }) // before the pusher's graceful stop

	// A's pushes are stuck before B's messages are sent.
	for range 3 {
		slow.next(t)
	}
	bodies := make([]string, 20)
	for i := range bodies {
		bodies[i] = "b"
	}
	e.send(qb, bodies...)
	for acked := 0; acked < len(bodies); {
		a := e.attempt(qb)
		if a.Outcome == pusher.AttemptAcknowledged {
			acked += len(a.MessageIDs)
		}
		if n, bound := p.InFlight(); n > bound {
			t.Fatalf("%d batches in flight, over the bound of %d", n, bound)
		}
	}
	// A's pushes may start before B's subscription joins, while A's project has the whole
	// bound to itself: each of its three subscriptions then takes up to 8/3 = 2 slots, which
	// it keeps while stuck. So A holds at most 6 (without the shares: 30), and B still gets
	// every message through.
	if m := most.Load(); m > 6 {
		t.Fatalf("project A's slow endpoint held %d pushes at once: more than its subscriptions' shares (3 × 2 of 8)", m)
	}
}
