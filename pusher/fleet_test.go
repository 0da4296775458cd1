package pusher_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pusher"
)

// TestFleetSharesAndSurvivesAKill: two replicas split four subscriptions (the second takes its
// share when it joins); one is killed with a push in flight; the other takes over its
// subscriptions and, once the abandoned messages' deadline passes, pushes them again. Every
// message is acknowledged, none is lost, and no delivery (message, receive count) is pushed
// twice.
func TestFleetSharesAndSurvivesAKill(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	deliveries := map[string]int{} // messageId/receiveCount → pushes
	blocked := map[string]bool{}   // queue id → requests hang until the client gives up
	ep := newEndpoint(t, false, nil)
	ep.setRespond(func(w http.ResponseWriter, p pushed) {
		mu.Lock()
		for _, m := range p.body.Messages {
			deliveries[fmt.Sprintf("%s/%d", m.MessageID, m.ReceiveCount)]++
		}
		hang := blocked[p.body.Queue.ID]
		mu.Unlock()
		if hang {
			<-p.ctx.Done() // until the killed client goes away
			return
		}
		w.WriteHeader(204)
	})
	var qs []meta.Queue
	for range 4 {
		q := e.queue("standard", nil)
		e.subscribe(q, ep.URL, func(s *meta.Subscription) { s.BatchSize = 5; s.TimeoutSeconds = 10 })
		qs = append(qs, q)
	}
	a := e.pusher(func(c *pusher.Config) { c.Member = "a" })
	for range 4 {
		e.next(func(ev event) bool { return ev.applied != nil && ev.member == "a" })
	}
	b := e.pusher(func(c *pusher.Config) { c.Member = "b" })
	for range 2 {
		e.next(func(ev event) bool { return ev.applied != nil && ev.member == "b" })
	}
	if len(b.Held()) != 2 {
		t.Fatalf("b holds %d after joining, want 2", len(b.Held()))
	}
	// a gives its extra two back before b can take them, so by now a holds two.
	aHeld := a.Held()
	if len(aHeld) != 2 {
		t.Fatalf("a holds %d, want 2", len(aHeld))
	}
	victim := aHeld[0]
	mu.Lock()
	blocked[victim.String()] = true
	mu.Unlock()

	var all []ids.ID
	for _, q := range qs {
		bodies := make([]string, 20)
		for i := range bodies {
			bodies[i] = fmt.Sprint(q.Name, "-", i)
		}
		all = append(all, e.send(q, bodies...)...)
	}
	// Wait until a has a push to the victim's queue in flight, then kill it.
	for {
		p := ep.next(t)
		if p.body.Queue.ID == victim.String() {
			break
		}
	}
	a.Kill()
	mu.Lock()
	blocked[victim.String()] = false
	mu.Unlock()
	// b takes a's two subscriptions once a's leases expire (it may re-apply ones it holds
	// meanwhile, so wait for the holding, not for a number of events).
	for len(b.Held()) != 4 {
		e.next(func(ev event) bool { return ev.applied != nil && ev.member == "b" })
	}
	// The abandoned messages come back at their deadline (the queue's 30 s visibility).
	e.clk.Advance(31 * time.Second)
	acked := map[ids.ID]bool{}
	for len(acked) < len(all) {
		ev := e.next(func(ev event) bool { return ev.attempt != nil })
		if ev.attempt.Outcome != meta.AttemptAcknowledged {
			continue
		}
		for _, id := range ev.attempt.MessageIDs {
			mid, _ := ids.ParseUUID(id)
			acked[mid] = true
		}
	}
	for _, id := range all {
		if !acked[id] {
			t.Fatalf("message %s never acknowledged", id)
		}
	}
	for _, q := range qs {
		if st := e.stats(q); st.Visible+st.InFlight+st.Delayed != 0 {
			t.Fatalf("queue %s not empty: %+v", q.Name, st)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	again := 0
	for k, n := range deliveries {
		if n > 1 {
			t.Fatalf("delivery %s pushed %d times", k, n)
		}
		if k[len(k)-2:] == "/2" {
			again++
		}
	}
	if again == 0 {
		t.Fatal("no message was pushed a second time: the killed push was not taken over")
	}
}

// TestGoneSubscriptions: a deleted subscription stops its pushes, and a subscription that
// outlived its queue (the API deletes it after the queue; a crash in between leaves it) is
// deleted by the fleet.
func TestGoneSubscriptions(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, status(204))
	q := e.queue("standard", nil)
	e.subscribe(q, ep.URL, nil)
	orphanQ := e.queue("standard", nil)
	e.subscribe(orphanQ, ep.URL, nil)
	if _, err := e.store.DeleteQueue(t.Context(), orphanQ.ProjectID, orphanQ.ID); err != nil {
		t.Fatal(err)
	}
	p := e.pusher(nil)
	e.applied(q, func(meta.Subscription) bool { return true })
	// No event announces these: poll the store and the replica.
	wakeUntil(t, func() bool {
		_, err := e.store.GetSubscription(t.Context(), orphanQ.ID)
		return err != nil
	})
	if err := e.store.DeleteSubscription(t.Context(), q.ID); err != nil {
		t.Fatal(err)
	}
	p.Changed(q.ID)
	wakeUntil(t, func() bool { return len(p.Held()) == 0 })
}
