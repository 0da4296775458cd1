package embeddedengine_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/ids"
)

// TestTopicsRestart: a topic's log, keyed state, counters, bindings, dedup windows, the
// work list and the copies' marks in a queue survive a reopen, and stored bytes are
// rebuilt from them.
func TestTopicsRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "messages.db")
	clk := enginetest.NewClock()
	e, err := embeddedengine.Open(path, clk, embeddedengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	project := ids.New()
	tp := engine.Topic{ID: ids.New(), Project: project, Type: engine.FIFO, Retention: time.Hour}
	q := engine.Queue{ID: ids.New(), Project: project, Type: engine.FIFO, VisibilityTimeout: time.Minute, Retention: time.Hour}
	must(0, e.CreateTopic(ctx, tp))
	must(0, e.CreateQueue(ctx, q))
	res := must(e.Publish(ctx, tp, []engine.PublishMessage{
		{Message: engine.Message{Body: "a", GroupID: "g", DedupID: "d"}},
		{Message: engine.Message{Body: `{"x":1}`, GroupID: "g", Key: "k"}},
	}))
	b := engine.Binding{ID: ids.New(), Queue: q.ID, Filter: `{"attributes":{"a":"b"}}`}
	must(0, e.Bind(ctx, tp, b))
	es := must(e.ReadLog(ctx, tp, 1, 10))
	cms := make([]engine.CopyMessage, len(es))
	for i, en := range es {
		cms[i] = engine.CopyMessage{Sequence: en.Sequence, ID: en.MessageID,
			Message: engine.Message{Body: en.Body, GroupID: en.GroupID, DedupID: "c-" + en.MessageID.String()}}
	}
	must(e.Copy(ctx, q, engine.CopyBatch{Topic: tp.ID, Binding: b.ID, Messages: cms}))
	must(0, e.AdvanceBindings(ctx, tp, []engine.Advance{{Binding: b.ID, Through: 2, Copied: 2}}))
	before := must(e.StoredBytes(ctx, project))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	clk.Advance(engine.DedupWindow + time.Minute) // the queue's dedup windows are gone: only the mark holds
	e = open(t, path, clk)
	if got := must(e.StoredBytes(ctx, project)); got != before {
		t.Fatalf("stored bytes %d after the reopen, %d before", got, before)
	}
	if bd := must(e.Bounds(ctx, tp)); bd.First != 1 || bd.Last != 2 {
		t.Fatalf("bounds %+v after the reopen", bd)
	}
	if st := must(e.State(ctx, tp, "k")); st.Body != `{"x":1}` || st.Sequence != 2 {
		t.Fatalf("state %+v after the reopen", st)
	}
	bs := must(e.Bindings(ctx, tp))
	if len(bs) != 1 || bs[0].Sequence != 2 || bs[0].Copied != 2 || bs[0].Filter != b.Filter || bs[0].Queue != q.ID {
		t.Fatalf("bindings %+v after the reopen", bs)
	}
	if active := must(e.ActiveTopics(ctx)); !slices.Contains(active, tp.ID) {
		t.Fatalf("the topic left the work list on reopen: %v", active)
	}
	recv := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute}))
	for _, m := range recv.Messages {
		noErrs(t, "ack", must2(e.Ack(ctx, q, []engine.Delivery{m.Delivery})))
	}
	if len(recv.Messages) != 2 {
		t.Fatalf("received %d copies after the reopen, want 2", len(recv.Messages))
	}
	must(e.Copy(ctx, q, engine.CopyBatch{Topic: tp.ID, Binding: b.ID, Messages: cms}))
	if st := must(e.Stats(ctx, q)); st.Visible+st.InFlight+st.Delayed != 0 {
		t.Fatalf("a batch copied again after the reopen was stored: %+v", st)
	}
	// A fifo publish's dedup window outlived the reopen until it ended; a new one holds.
	again := must(e.Publish(ctx, tp, []engine.PublishMessage{{Message: engine.Message{Body: "a", GroupID: "g", DedupID: "d"}}}))
	if again[0].Duplicate || again[0].Sequence != 3 || again[0].MessageID == res[0].MessageID {
		t.Fatalf("republish after the window: %+v", again[0])
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, path, clk)
	dup := must(e.Publish(ctx, tp, []engine.PublishMessage{{Message: engine.Message{Body: "a", GroupID: "g", DedupID: "d"}}}))
	if !dup[0].Duplicate || dup[0].Sequence != 3 {
		t.Fatalf("republish within the window, across a reopen: %+v", dup[0])
	}
}
