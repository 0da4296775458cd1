package service

import (
	"context"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/tenancy"
)

// polled is what one long poll answered.
type polled struct {
	consumer string
	msgs     []engine.Received
	err      error
}

// poll starts a long poll of consumer on q and waits until it is parked on the queue's
// arbiter (the arbiter then counts parked waiters+1). Its answer arrives on out.
func poll(ctx context.Context, t *testing.T, s *Service, q meta.Queue, consumer string, parked int, out chan<- polled) {
	t.Helper()
	pollBound(ctx, t, s, q, engine.ConsumerOf{ID: consumer}, parked, out)
}

// pollBound is poll by a consumer with a bound on its backlog.
func pollBound(ctx context.Context, t *testing.T, s *Service, q meta.Queue, c engine.ConsumerOf, parked int, out chan<- polled) {
	t.Helper()
	consumer := c.ID
	go func() {
		req := engine.ReceiveRequest{Max: 1, Visibility: time.Minute, Consumer: &c}
		msgs, err := s.LongPoll(ctx, q, req, 20*time.Second)
		out <- polled{consumer, msgs, err}
	}()
	await(t, consumer+" parked", func() bool { return s.Waiting(q.ID) == parked+1 })
}

// served sends one message and answers which waiting consumer received it.
func served(t *testing.T, s *Service, q meta.Queue, out <-chan polled) string {
	t.Helper()
	if _, err := s.Send(t.Context(), q, []engine.Message{{Body: "m"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-out:
		if p.err != nil || len(p.msgs) != 1 {
			t.Fatalf("%s answered %d messages, %v", p.consumer, len(p.msgs), p.err)
		}
		return p.consumer
	case <-time.After(10 * time.Second):
		t.Fatal("no waiter was served")
	}
	return ""
}

// TestRoundRobinServesTheLeastRecentlyServed: on a roundRobin queue a consumer never served
// goes before one served already, even one parked earlier; among the never served, the one
// parked first goes first.
func TestRoundRobinServesTheLeastRecentlyServed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, Config{})
	q, err := f.svc.UpdateQueue(t.Context(), f.q, func(q *meta.Queue) error { q.Fairness = FairnessRoundRobin; return nil })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	out := make(chan polled, 4)
	defer func() {
		cancel()
		for f.svc.Waiting(q.ID) > 0 {
			<-out
		}
	}()
	poll(ctx, t, f.svc, q, "a", 0, out)
	poll(ctx, t, f.svc, q, "b", 1, out)
	if got := served(t, f.svc, q, out); got != "a" {
		t.Fatalf("first message to %s, want a (parked first, neither served)", got)
	}
	// a parks again, after b; c parks last. b and c were never served: b, parked first, then
	// c, which goes before a although a parked before it.
	poll(ctx, t, f.svc, q, "a", 1, out)
	poll(ctx, t, f.svc, q, "c", 2, out)
	if got := served(t, f.svc, q, out); got != "b" {
		t.Fatalf("second message to %s, want b (never served, parked before c)", got)
	}
	if got := served(t, f.svc, q, out); got != "c" {
		t.Fatalf("third message to %s, want c (never served) before a (served, parked earlier)", got)
	}
	if got := served(t, f.svc, q, out); got != "a" {
		t.Fatalf("fourth message to %s, want a", got)
	}
}

// TestProportionalServesTheLowestShare: on a proportional queue the waiter holding the lowest
// share of its backlog goes first, even when another parked before it.
func TestProportionalServesTheLowestShare(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, Config{})
	q, err := f.svc.UpdateQueue(t.Context(), f.q, func(q *meta.Queue) error { q.Fairness = FairnessProportional; return nil })
	if err != nil {
		t.Fatal(err)
	}
	a, b := engine.ConsumerOf{ID: "a", MaxBacklog: 2}, engine.ConsumerOf{ID: "b", MaxBacklog: 10}
	// Each holds one message, received at once (not a turn): a half of its backlog, b a tenth.
	for _, c := range []engine.ConsumerOf{a, b} {
		if _, err := f.svc.Send(t.Context(), q, []engine.Message{{Body: "held"}}); err != nil {
			t.Fatal(err)
		}
		msgs, err := f.svc.LongPoll(t.Context(), q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute, Consumer: &c}, time.Second)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("%s received %d, %v", c.ID, len(msgs), err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	out := make(chan polled, 2)
	defer func() {
		cancel()
		for f.svc.Waiting(q.ID) > 0 {
			<-out
		}
	}()
	pollBound(ctx, t, f.svc, q, a, 0, out)
	pollBound(ctx, t, f.svc, q, b, 1, out)
	if got := served(t, f.svc, q, out); got != "b" {
		t.Fatalf("the message went to %s, want b (a tenth of its backlog held, a half)", got)
	}
	if got := served(t, f.svc, q, out); got != "a" {
		t.Fatalf("the next went to %s, want a", got)
	}
}

// TestParkingBetweenProjects: a project at its maxWaitingReceives answers its next long poll
// at once, and leaves another project's room to park untouched.
func TestParkingBetweenProjects(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false, Config{Parking: tenancy.NewLocalParking()})
	f.setLimits(t, map[string]int64{meta.LimitMaxWaitingReceives: 1})
	ctx := t.Context()
	other := ids.New()
	if err := f.store.CreateProject(ctx, meta.Project{ID: other, Name: "other", CreatedAt: start}); err != nil {
		t.Fatal(err)
	}
	release, ok := f.svc.Park(ctx, f.project, time.Minute)
	if !ok {
		t.Fatal("the project's first waiting receive did not park")
	}
	if _, ok := f.svc.Park(ctx, f.project, time.Minute); ok {
		t.Fatal("parked past the project's maxWaitingReceives of 1")
	}
	releaseOther, ok := f.svc.Park(ctx, other, time.Minute)
	if !ok {
		t.Fatal("another project could not park while the first is at its limit")
	}
	releaseOther()
	release()
	release, ok = f.svc.Park(ctx, f.project, time.Minute)
	if !ok {
		t.Fatal("a released slot was not free again")
	}
	release()
}
