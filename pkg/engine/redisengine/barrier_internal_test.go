package redisengine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// forgetBarrier makes e act as a replica that has not heard of q's pending barrier yet (its
// cached partition count says none): its sends take the partitions' scripts, whose fences
// must turn them to the hold.
func forgetBarrier(e *Engine, q ids.ID) { e.setPartitions(q, 1, false) }

// TestKeyedSendFenced: a keyed send from a replica unaware of a pending barrier is refused by
// the partition's fence (keyed_send.lua) and held behind the barrier, unconflated: it neither
// changes the message accepted before the barrier nor is delivered before the barrier left.
func TestKeyedSendFenced(t *testing.T) {
	t.Parallel()
	e, _, _ := newInternal(t)
	q := engine.Queue{ID: ids.New(), Project: ids.New(), Type: engine.Standard, VisibilityTimeout: time.Minute, Retention: time.Hour}
	keyed := func(key, body string) engine.Message { return engine.Message{Key: key, Body: body} }
	v1 := mustSend(t, e, q, keyed("K", "v1"))
	mustSend(t, e, q, engine.Message{Body: "B", Barrier: true})
	forgetBarrier(e, q.ID)
	res := mustSend(t, e, q, keyed("K", "v2"), keyed("J", "j"))
	if res[0].Merged || res[0].MessageID == v1[0].MessageID || res[1].Merged {
		t.Fatalf("keyed send behind a barrier answered %+v", res)
	}
	want := func(bodies ...string) {
		t.Helper()
		r, err := e.Receive(context.Background(), q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		var ds []engine.Delivery
		for _, m := range r.Messages {
			got, ds = append(got, m.Body), append(ds, m.Delivery)
		}
		slices.Sort(got)
		if !slices.Equal(got, bodies) {
			t.Fatalf("received %q, want %q", got, bodies)
		}
		if _, err := e.Ack(context.Background(), q, ds); err != nil {
			t.Fatal(err)
		}
	}
	want("v1")
	want("B")
	want("j", "v2")
}
