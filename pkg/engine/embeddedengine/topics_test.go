package embeddedengine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
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

// TestTopicsRecount: the project's stored-bytes counter, moved by publishes, replaces,
// patches, deletes of state, trims and topic deletes, matches a recount of the disk.
func TestTopicsRecount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := enginetest.NewClock()
	e := open(t, filepath.Join(t.TempDir(), "messages.db"), clk)
	project := ids.New()
	check := func(what string) {
		t.Helper()
		got := must(e.StoredBytes(ctx, project))
		if re := embeddedengine.Recount(t, e, project, nil); re != got {
			t.Fatalf("%s: StoredBytes %d, a recount of the disk %d", what, got, re)
		}
	}
	tp := engine.Topic{ID: ids.New(), Project: project, Type: engine.Standard, Retention: time.Hour}
	other := engine.Topic{ID: ids.New(), Project: project, Type: engine.Standard, Retention: 0}
	must(0, e.CreateTopic(ctx, tp))
	must(0, e.CreateTopic(ctx, other))
	pub := func(t engine.Topic, ms ...engine.PublishMessage) { must(e.Publish(ctx, t, ms)) }
	pub(tp, engine.PublishMessage{Message: engine.Message{Body: "plain", Attributes: map[string]string{"a": "b"}}},
		engine.PublishMessage{Message: engine.Message{Key: "k", Body: `{"x":"yy"}`}})
	check("publishes")
	pub(tp, engine.PublishMessage{Message: engine.Message{Key: "k", Body: `{"z":1}`, Merge: engine.MergePatch}},
		engine.PublishMessage{Message: engine.Message{Key: "j", Body: `{}`}})
	check("a patch")
	pub(tp, engine.PublishMessage{Message: engine.Message{Key: "j"}, Delete: true})
	check("a state deleted")
	pub(other, engine.PublishMessage{Message: engine.Message{Body: "gone at once"}})
	must(0, e.Trim(ctx, other))
	check("a trim at retention 0 without bindings")
	clk.Advance(2 * time.Hour)
	pub(tp, engine.PublishMessage{Message: engine.Message{Body: "young"}})
	must(0, e.Trim(ctx, tp))
	check("a trim by retention")
	must(0, e.DeleteTopic(ctx, tp))
	check("a topic deleted")
	if got := must(e.StoredBytes(ctx, project)); got != 0 {
		t.Fatalf("StoredBytes %d with every topic empty or deleted", got)
	}
}

// TestTopicsConcurrentPatches: patches of one key published at once by many callers each
// merge into the state the one before left, whether that one's commit is done or still
// queued (a topic's pending states), and every publish gets its own sequence.
func TestTopicsConcurrentPatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t, filepath.Join(t.TempDir(), "messages.db"), enginetest.NewClock())
	tp := engine.Topic{ID: ids.New(), Project: ids.New(), Type: engine.Standard, Retention: time.Hour}
	const writers, each = 8, 20
	var wg sync.WaitGroup
	seqs := make(chan uint64, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				body := fmt.Sprintf(`{"w%d_%d":%d}`, w, i, i)
				res, err := e.Publish(ctx, tp, []engine.PublishMessage{{Message: engine.Message{Key: "k", Body: body, Merge: engine.MergePatch}}})
				if err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
				seqs <- res[0].Sequence
			}
		}()
	}
	wg.Wait()
	close(seqs)
	var got []uint64
	for s := range seqs {
		got = append(got, s)
	}
	slices.Sort(got)
	if len(got) != writers*each || got[0] != 1 || got[len(got)-1] != writers*each || len(slices.Compact(got)) != writers*each {
		t.Fatalf("sequences %v, want 1..%d once each", got, writers*each)
	}
	var state map[string]int
	if err := json.Unmarshal([]byte(must(e.State(ctx, tp, "k")).Body), &state); err != nil {
		t.Fatal(err)
	}
	if len(state) != writers*each {
		t.Fatalf("the state holds %d members, want %d: a patch merged into a state older than the one before it", len(state), writers*each)
	}
}

// TestTopicDedupWindowsEnd: a fifo topic's ended dedup windows leave the disk at its next
// trim, also when they ended while the engine was closed.
func TestTopicDedupWindowsEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "messages.db")
	clk := enginetest.NewClock()
	e := open(t, path, clk)
	tp := engine.Topic{ID: ids.New(), Project: ids.New(), Type: engine.FIFO, Retention: time.Hour}
	must(e.Publish(ctx, tp, []engine.PublishMessage{{Message: engine.Message{Body: "a", GroupID: "g", DedupID: "d1"}},
		{Message: engine.Message{Body: "b", GroupID: "g", DedupID: "d2"}}}))
	must(0, e.Trim(ctx, tp))
	if n := embeddedengine.TopicDedups(t, e, tp.ID); n != 2 {
		t.Fatalf("%d dedup records within the window, want 2", n)
	}
	must(0, e.Close())
	clk.Advance(engine.DedupWindow)
	e = open(t, path, clk)
	must(0, e.Trim(ctx, tp))
	if n := embeddedengine.TopicDedups(t, e, tp.ID); n != 0 {
		t.Fatalf("%d dedup records after the window, want 0", n)
	}
}

// TestTopicWakeRestart: an idle topic's wake time survives a reopen (the fan-out trims the
// topic when it comes due, though nobody publishes to it), as does a cleared one.
func TestTopicWakeRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "messages.db")
	clk := enginetest.NewClock()
	e := open(t, path, clk)
	project := ids.New()
	waking := engine.Topic{ID: ids.New(), Project: project, Type: engine.Standard, Retention: time.Hour}
	cleared := engine.Topic{ID: ids.New(), Project: project, Type: engine.Standard, Retention: time.Hour}
	for _, tp := range []engine.Topic{waking, cleared} {
		must(0, e.CreateTopic(ctx, tp))
		must(e.Publish(ctx, tp, []engine.PublishMessage{{Message: engine.Message{Body: "a"}}}))
	}
	must(0, e.IdleTopic(ctx, waking.ID, 1, clk.Now().Add(time.Hour)))
	must(0, e.IdleTopic(ctx, cleared.ID, 1, clk.Now().Add(time.Hour)))
	must(0, e.IdleTopic(ctx, cleared.ID, 1, time.Time{}))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, path, clk)
	if active := must(e.ActiveTopics(ctx)); len(active) != 0 {
		t.Fatalf("idle topics listed after the reopen: %v", active)
	}
	clk.Advance(time.Hour)
	if active := must(e.ActiveTopics(ctx)); !slices.Equal(active, []ids.ID{waking.ID}) {
		t.Fatalf("at the wake time after a reopen the work list is %v, want only %s", active, waking.ID)
	}
}
