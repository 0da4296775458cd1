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

// TestEndGroupSurvivesRestart: a message's endGroup mark is stored with it, so after a
// restart (which forgets the bindings, soft state) the binding made by its receive still ends
// when it is acknowledged.
func TestEndGroupSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "messages.db")
	clk := enginetest.NewClock()
	e := must(embeddedengine.Open(path, clk, embeddedengine.Options{}))
	q := engine.Queue{ID: ids.New(), Type: engine.FIFO, GroupPolicy: engine.GroupExclusive,
		VisibilityTimeout: 30 * time.Second, Retention: time.Hour}
	if err := e.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	must(e.Send(ctx, q, []engine.Message{{Body: "a1", GroupID: "g", EndGroup: true}, {Body: "a2", GroupID: "g"}}))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = must(embeddedengine.Open(path, clk, embeddedengine.Options{}))
	defer e.Close()
	as := func(c string) []engine.Received {
		res := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute, Consumer: &engine.ConsumerOf{ID: c}}))
		return res.Messages
	}
	got := as("c1")
	if len(got) != 1 || got[0].Body != "a1" {
		t.Fatalf("c1 received %+v, want a1", got)
	}
	if errs := must(e.Ack(ctx, q, []engine.Delivery{got[0].Delivery})); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if got := as("c2"); len(got) != 1 || got[0].Body != "a2" {
		t.Fatalf("c2 received %+v after a1 ended the group's binding, want a2", got)
	}
}
