package embeddedengine_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/ids"
)

// TestFIFO covers the embedded engine's fifo behaviour until the shared suite's fifo cases
// land (they will replace this): strict order per group, one batch in flight per group, other
// groups never blocked, sequence numbers, dedup, redrive keeping the group, Groups and
// PurgeGroup.
func TestFIFO(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := enginetest.NewClock()
	e := open(t, filepath.Join(t.TempDir(), "messages.db"), clk)
	dlq := engine.Queue{ID: ids.New(), Type: engine.FIFO, Retention: time.Hour}
	q := engine.Queue{ID: ids.New(), Type: engine.FIFO, Retention: time.Hour,
		Redrive: &engine.Redrive{DeadLetter: &dlq, MaxReceiveCount: 2}}
	for _, qq := range []engine.Queue{dlq, q} {
		if err := e.CreateQueue(ctx, qq); err != nil {
			t.Fatal(err)
		}
	}
	send := func(group string, bodies ...string) {
		t.Helper()
		ms := make([]engine.Message, len(bodies))
		for i, b := range bodies {
			ms[i] = engine.Message{Body: b, GroupID: group}
		}
		for i, r := range must(e.Send(ctx, q, ms)) {
			if r.Duplicate {
				t.Fatalf("send %d was a duplicate", i)
			}
		}
	}
	recv := func(qq engine.Queue, max int, vis time.Duration) []engine.Received {
		t.Helper()
		return must(e.Receive(ctx, qq, engine.ReceiveRequest{Max: max, Visibility: vis})).Messages
	}
	bodies := func(ms []engine.Received) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = m.Body
		}
		return out
	}
	send("a", "a1", "a2", "a3")
	send("b", "b1")
	send("a", "a4")

	// The oldest group first, as many of its messages in order as fit.
	first := recv(q, 2, time.Minute)
	if got := bodies(first); len(got) != 2 || got[0] != "a1" || got[1] != "a2" {
		t.Fatalf("first batch %v, want [a1 a2]", got)
	}
	if first[0].SequenceNumber >= first[1].SequenceNumber || first[0].GroupID != "a" {
		t.Fatalf("sequence numbers %d, %d", first[0].SequenceNumber, first[1].SequenceNumber)
	}
	// a is blocked while its batch is in flight; b is not.
	if got := bodies(recv(q, 10, time.Minute)); len(got) != 1 || got[0] != "b1" {
		t.Fatalf("while a is in flight received %v, want [b1]", got)
	}
	gp := must(e.Groups(ctx, q, 10, "", ""))
	if len(gp.Groups) != 2 || gp.Groups[0].GroupID != "a" || gp.Groups[0].Messages != 4 || !gp.Groups[0].InFlight {
		t.Fatalf("groups %+v", gp.Groups)
	}
	// Acking one of the batch keeps the group blocked; acking both frees it.
	noErrs(t, "ack a1", must2(e.Ack(ctx, q, []engine.Delivery{first[0].Delivery})))
	if got := recv(q, 10, time.Minute); len(got) != 0 {
		t.Fatalf("with a2 in flight received %v", bodies(got))
	}
	noErrs(t, "ack a2", must2(e.Ack(ctx, q, []engine.Delivery{first[1].Delivery})))
	next := recv(q, 10, time.Minute)
	if got := bodies(next); len(got) != 2 || got[0] != "a3" || got[1] != "a4" {
		t.Fatalf("after the batch received %v, want [a3 a4]", got)
	}
	// A released message comes back first, before later ones; retry-after keeps the group blocked.
	noErrs(t, "retry a4", must2(e.ChangeVisibility(ctx, q, []engine.VisibilityChange{{Delivery: next[1].Delivery, Visibility: 30 * time.Second}})))
	noErrs(t, "release a3", must2(e.ChangeVisibility(ctx, q, []engine.VisibilityChange{{Delivery: next[0].Delivery}})))
	if got := recv(q, 10, time.Minute); len(got) != 0 {
		t.Fatalf("with a4 retried after 30 s received %v", bodies(got))
	}
	clk.Advance(30 * time.Second)
	again := recv(q, 10, time.Minute)
	if got := bodies(again); len(got) != 2 || got[0] != "a3" || got[1] != "a4" || again[0].ReceiveCount != 2 {
		t.Fatalf("after the retry received %v (receiveCount %d), want [a3 a4] again", got, again[0].ReceiveCount)
	}
	// Deadlines pass; the third receive moves both to the dead-letter queue, group kept.
	clk.Advance(time.Minute)
	if got := bodies(recv(q, 10, time.Hour)); len(got) != 1 || got[0] != "b1" { // b1's deadline passed too
		t.Fatalf("received %v, want only b1 (a3 and a4 are past maxReceiveCount)", got)
	}
	dm := recv(dlq, 10, time.Minute)
	if got := bodies(dm); len(got) != 2 || got[0] != "a3" || got[1] != "a4" || dm[0].GroupID != "a" || dm[0].DeadLetter == nil {
		t.Fatalf("dead-letter queue received %v %+v", got, dm)
	}
	// Dedup: same dedup id within 5 minutes answers the original id.
	r1 := must(e.Send(ctx, q, []engine.Message{{Body: "x", GroupID: "c", DedupID: "d1"}}))
	r2 := must(e.Send(ctx, q, []engine.Message{{Body: "y", GroupID: "c", DedupID: "d1"}}))
	if !r2[0].Duplicate || r2[0].MessageID != r1[0].MessageID {
		t.Fatalf("dedup: %+v then %+v", r1, r2)
	}
	// PurgeGroup removes one group, in flight or not.
	if err := e.PurgeGroup(ctx, q, "c"); err != nil {
		t.Fatal(err)
	}
	gp = must(e.Groups(ctx, q, 10, "", ""))
	for _, g := range gp.Groups {
		if g.GroupID == "c" {
			t.Fatalf("group c after PurgeGroup: %+v", g)
		}
	}
	// Paging groups.
	for _, g := range []string{"g1", "g2", "g3"} {
		send(g, g)
	}
	seen := 0
	cursor := ""
	for range 10 {
		p := must(e.Groups(ctx, q, 2, cursor, ""))
		seen += len(p.Groups)
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if seen != 4 { // b (b1 in flight, never acked) and g1..g3
		t.Fatalf("paged through %d groups, want 4", seen)
	}
}
