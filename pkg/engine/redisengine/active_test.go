package redisengine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/testservers"
)

// A queue is active from its first send until Sweep finds it empty and not sent to for a
// while; deleting it forgets it.
func TestActiveQueues(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	clk := enginetest.NewClock()
	e := newEngine(t, redis.NewClient(&redis.Options{Addr: addr}), clk, redisengine.Options{})
	ctx := context.Background()
	active := func(q engine.Queue) bool { return slices.Contains(must(e.ActiveQueues(ctx)), q.ID) }
	idle, busy := newQueue(), newQueue()
	if active(idle) || active(busy) {
		t.Fatal("queues without sends are active")
	}
	must(e.Send(ctx, busy, []engine.Message{{Body: "x"}}))
	if !active(busy) || active(idle) {
		t.Fatal("a send did not make its queue (alone) active")
	}
	m := must(e.Receive(ctx, busy, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})).Messages
	must(e.Ack(ctx, busy, []engine.Delivery{m[0].Delivery}))
	if err := e.Sweep(ctx, []engine.Queue{busy}); err != nil {
		t.Fatal(err)
	}
	if !active(busy) {
		t.Fatal("a queue sent to moments ago was retired: a concurrent send could be missed")
	}
	must(e.Send(ctx, busy, []engine.Message{{Body: "y"}}))
	clk.Advance(5 * time.Minute)
	if err := e.Sweep(ctx, []engine.Queue{busy}); err != nil {
		t.Fatal(err)
	}
	if !active(busy) {
		t.Fatal("a queue holding a message was retired")
	}
	m = must(e.Receive(ctx, busy, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})).Messages
	must(e.Ack(ctx, busy, []engine.Delivery{m[0].Delivery}))
	if err := e.Sweep(ctx, []engine.Queue{busy}); err != nil {
		t.Fatal(err)
	}
	if active(busy) {
		t.Fatal("an empty queue not sent to for minutes is still active")
	}
	must(e.Send(ctx, busy, []engine.Message{{Body: "z"}}))
	if !active(busy) {
		t.Fatal("a send after retirement did not make the queue active again")
	}
	if err := e.DeleteQueue(ctx, busy.ID); err != nil {
		t.Fatal(err)
	}
	if active(busy) {
		t.Fatal("a deleted queue is still active")
	}
}
