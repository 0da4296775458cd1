package embeddedengine_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/ids"
)

// TestParkedGroupsRestart: a parkGroup parking survives a restart (the group still parked, its
// messages out still recorded), and the move back after it restores the group's order.
func TestParkedGroupsRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "messages.db")
	clk := enginetest.NewClock()
	e := must(embeddedengine.Open(path, clk, embeddedengine.Options{}))
	dlq := engine.Queue{ID: ids.New(), Type: engine.FIFO, VisibilityTimeout: 30 * time.Second, Retention: 24 * time.Hour}
	q := engine.Queue{ID: ids.New(), Type: engine.FIFO, VisibilityTimeout: 30 * time.Second, Retention: 24 * time.Hour,
		OnDeadLetter: engine.PoisonParkGroup, Redrive: &engine.Redrive{DeadLetter: &dlq, MaxReceiveCount: 5}}
	for _, x := range []engine.Queue{dlq, q} {
		if err := e.CreateQueue(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []string{"a1", "a2", "a3"} {
		must(e.Send(ctx, q, []engine.Message{{Body: b, GroupID: "a"}}))
	}
	got := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute}))
	if errs := must(e.DeadLetter(ctx, q, []engine.DeadLetterRequest{{Delivery: got.Messages[0].Delivery, Reason: "poison"}})); errs[0] != nil {
		t.Fatal(errs[0])
	}
	must(e.Send(ctx, q, []engine.Message{{Body: "a4", GroupID: "a"}}))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = must(embeddedengine.Open(path, clk, embeddedengine.Options{}))
	defer e.Close()
	page := must(e.Groups(ctx, q, 10, "", engine.GroupParked))
	if len(page.Groups) != 1 || page.Groups[0].LastError != "poison" || page.Groups[0].Messages != 1 {
		t.Fatalf("parked groups after a restart: %+v", page.Groups)
	}
	if r := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})); len(r.Messages) != 0 {
		t.Fatalf("a parked group delivered %d messages after a restart", len(r.Messages))
	}
	res := must(e.MoveBatch(ctx, dlq, engine.MoveRequest{Tag: "back", Limit: 10,
		Choose: func(engine.BrowsedMessage) (*engine.Queue, bool) { return &q, false }}))
	if res.Moved != 3 {
		t.Fatalf("moved %d, want 3", res.Moved)
	}
	r := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute}))
	var bodies []string
	for _, m := range r.Messages {
		bodies = append(bodies, m.Body)
	}
	if len(bodies) != 4 || bodies[0] != "a1" || bodies[1] != "a2" || bodies[2] != "a3" || bodies[3] != "a4" {
		t.Fatalf("after the move back: %q, want a1..a4", bodies)
	}
}
