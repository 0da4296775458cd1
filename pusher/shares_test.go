package pusher_test

import (
	"net/http"
	"testing"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pusher"
)

// TestSlowEndpointsHoldOnlyTheirShare (docs/security.md#what-one-tenant-can-cost): project A's
// subscription pushes to an endpoint that never answers and, alone on the replica, takes the whole
// bound of 8 batches. Then project B's subscription joins: B's share is half the bound, so B takes
// slots from A's stuck pushes (preemption gives A's batches back) and every one of B's messages is
// pushed and acknowledged while A's pushes are still stuck, the bound never passed.
func TestSlowEndpointsHoldOnlyTheirShare(t *testing.T) {
	e := newEnv(t)
	stuck := make(chan struct{})
	slow := newEndpoint(t, false, func(w http.ResponseWriter, p pushed) {
		select {
		case <-stuck:
		case <-p.ctx.Done():
		}
	})
	fast := newEndpoint(t, false, status(http.StatusNoContent))
	qa := e.queue("standard", nil)
	e.subscribe(qa, slow.URL, func(s *meta.Subscription) { s.BatchSize, s.MaxInFlight, s.TimeoutSeconds = 1, 10, 60 })
	e.send(qa, "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11", "a12")
	p := e.pusher(func(c *pusher.Config) { c.MaxInFlight = 8 })
	t.Cleanup(func() { close(stuck) }) // before the pusher's graceful stop
	for range 8 {
		slow.next(t)
	}
	if n, bound := p.InFlight(); n != bound {
		t.Fatalf("A alone holds %d of the bound %d", n, bound)
	}

	other := meta.Project{ID: ids.New(), Name: "b", CreatedAt: e.clk.Now()}
	if err := e.store.CreateProject(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	qb := e.queue("standard", func(q *meta.Queue) { q.ProjectID = other.ID })
	e.subscribe(qb, fast.URL, func(s *meta.Subscription) { s.BatchSize, s.MaxInFlight = 1, 10 })
	p.Changed(qb.ID)
	bodies := make([]string, 20)
	for i := range bodies {
		bodies[i] = "b"
	}
	e.send(qb, bodies...)
	for acked := 0; acked < len(bodies); {
		a := e.attempt(qb)
		if a.Outcome == meta.AttemptAcknowledged {
			acked += len(a.MessageIDs)
		}
		if n, bound := p.InFlight(); n > bound {
			t.Fatalf("%d batches in flight, over the bound of %d", n, bound)
		}
	}
	// What B took was given back by A, not lost: A's batches return to its queue.
	e.next(func(ev event) bool { return ev.queue == qa.ID && ev.gaveBack > 0 })
}
