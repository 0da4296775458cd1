package movetask_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/movetask"
)

// replayWorld is a world with a topic of the project holding n published entries; the odd
// sequences have color red, the even ones blue.
func replayWorld(t *testing.T, n int) (*world, meta.Topic) {
	t.Helper()
	w := newWorld(t)
	tp := meta.Topic{ID: ids.New(), ProjectID: w.src.ProjectID, Name: "t", Type: "standard", RetentionSeconds: 3600,
		CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := w.store.CreateTopicWithin(t.Context(), tp, 0); err != nil {
		t.Fatal(err)
	}
	et := movetask.EngineTopic(tp)
	if err := w.eng.CreateTopic(t.Context(), et); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		color := "blue"
		if i%2 == 1 {
			color = "red"
		}
		m := engine.PublishMessage{Message: engine.Message{Body: "m" + strconv.Itoa(i), Attributes: map[string]string{"color": color}}}
		if _, err := w.eng.Publish(t.Context(), et, []engine.PublishMessage{m}); err != nil {
			t.Fatal(err)
		}
	}
	return w, tp
}

func newReplay(w *world, tp meta.Topic, from, to uint64, rate int) meta.MoveTask {
	return meta.MoveTask{ID: ids.New(), ProjectID: tp.ProjectID, QueueID: tp.ID, TopicID: tp.ID, Destination: w.dst.ID,
		FromSequence: from, ToSequence: to, MaxPerSecond: rate, Status: meta.MoveRunning, StartedAt: time.Now(), Counting: true}
}

func (w *world) replayRunner(b movetask.Budget) *movetask.Runner {
	return &movetask.Runner{Budget: b, Replays: movetask.ForStores(w.eng, w.store)}
}

// dest reads every visible message of the destination.
func (w *world) dest(t *testing.T) []engine.BrowsedMessage {
	t.Helper()
	var out []engine.BrowsedMessage
	cursor := ""
	for {
		res, err := w.eng.Browse(t.Context(), w.dst.Engine(nil), engine.BrowseRequest{State: engine.StateVisible, Limit: 100, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Messages...)
		if cursor = res.NextCursor; cursor == "" {
			return out
		}
	}
}

// TestReplayCopiesRange: a replay copies the entries of its range that its filter selects,
// in order, as new messages carrying their origin; toMove is counted first.
func TestReplayCopiesRange(t *testing.T) {
	w, tp := replayWorld(t, 20)
	task := newReplay(w, tp, 3, 15, 10_000)
	task.Filter = `{"attributes":{"color":"red"}}`
	got := w.run(t, w.replayRunner(nil), task)
	if got.Status != meta.MoveCompleted || got.Moved != 7 || got.ToMove != 7 || got.Failed != 0 {
		t.Fatalf("task ended %+v; want completed, 7 moved of 7", got)
	}
	msgs := w.dest(t)
	if len(msgs) != 7 {
		t.Fatalf("destination holds %d messages, want 7", len(msgs))
	}
	for i, m := range msgs {
		attrs, r := engine.SplitReplayOf(m.Attributes)
		seq := uint64(3 + 2*i)
		if r == nil || r.Topic != tp.ID || r.Sequence != seq || m.Body != "m"+strconv.FormatUint(seq, 10) || attrs["color"] != "red" || len(attrs) != 1 {
			t.Fatalf("message %d: %q %v (replayOf %+v), want m%d from sequence %d", i, m.Body, m.Attributes, r, seq, seq)
		}
	}
}

// TestReplayDryRun counts what would be replayed and sends nothing.
func TestReplayDryRun(t *testing.T) {
	w, tp := replayWorld(t, 12)
	task := newReplay(w, tp, 1, 12, 10_000)
	task.DryRun, task.Filter = true, `{"attributes":{"color":"blue"}}`
	got := w.run(t, w.replayRunner(nil), task)
	if got.Status != meta.MoveCompleted || got.ToMove != 6 || got.Moved != 0 {
		t.Fatalf("dry run ended %+v; want completed, toMove 6, moved 0", got)
	}
	if n := len(w.dest(t)); n != 0 {
		t.Fatalf("a dry run sent %d messages", n)
	}
}

// TestReplayRate: at 10 messages a second a batch sends one message, each charged a request
// of the project's budget with its bytes.
func TestReplayRate(t *testing.T) {
	w, tp := replayWorld(t, 4)
	b := &budget{}
	got := w.run(t, w.replayRunner(b), newReplay(w, tp, 1, 4, 10))
	if got.Status != meta.MoveCompleted || got.Moved != 4 {
		t.Fatalf("task ended %+v", got)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	want := 2*engine.PayloadBytes("m1", map[string]string{"color": "red"}) + 2*engine.PayloadBytes("m2", map[string]string{"color": "blue"})
	// The count reads the range in one batch (a request); the moves take one batch each.
	if b.requests != 5 || b.bytes != want {
		t.Fatalf("charged %d requests, %d bytes; want 5 and %d", b.requests, b.bytes, want)
	}
}

// onSend runs f at the first charge of a batch that sends (bytes > 0).
type onSend struct {
	once sync.Once
	f    func(ctx context.Context)
}

func (o *onSend) Charge(ctx context.Context, _ ids.ID, _ int, bytes int64) bool {
	if bytes > 0 {
		o.once.Do(func() { o.f(ctx) })
	}
	return ctx.Err() == nil
}

// TestReplayCancel: a cancel stops the replay after the batch in transit; its moved count
// says what was sent.
func TestReplayCancel(t *testing.T) {
	w, tp := replayWorld(t, 6)
	task := newReplay(w, tp, 1, 6, 10)
	cancel := &onSend{f: func(ctx context.Context) {
		cur, err := w.store.GetMoveTask(ctx, task.QueueID, task.ID)
		if err != nil {
			t.Error(err)
			return
		}
		cur.Status, cur.FinishedAt = meta.MoveCancelled, time.Now()
		if _, err := w.store.UpdateMoveTask(ctx, cur); err != nil {
			t.Error(err)
		}
	}}
	got := w.run(t, w.replayRunner(cancel), task)
	if n := len(w.dest(t)); got.Status != meta.MoveCancelled || got.Moved != 1 || n != 1 {
		t.Fatalf("task %s, moved %d, destination %d; want cancelled, 1, 1", got.Status, got.Moved, n)
	}
}

// crashingStore fails the first checkpoint after a send and ends the runner there: the
// replica died between a batch's send and its checkpoint.
type crashingStore struct {
	meta.MoveTaskStore
	crash   func()
	crashed bool
	mu      sync.Mutex
}

func (s *crashingStore) UpdateMoveTask(ctx context.Context, t meta.MoveTask) (meta.MoveTask, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.crashed && t.Moved > 0 {
		s.crashed = true
		s.crash()
		return meta.MoveTask{}, apierr.New(apierr.Unavailable, "the replica died")
	}
	if s.crashed {
		return meta.MoveTask{}, errors.New("a dead replica writes nothing")
	}
	return s.MoveTaskStore.UpdateMoveTask(ctx, t)
}

// TestReplayResumedAfterCrash: a replica dies between a batch's send and its checkpoint;
// another takes the task over once the lease lapsed and finishes it from the last
// checkpoint. Nothing is lost; only the batch in transit is sent twice.
func TestReplayResumedAfterCrash(t *testing.T) {
	w, tp := replayWorld(t, 30)
	task := newReplay(w, tp, 1, 30, 100) // batches of 10
	if err := w.store.CreateMoveTask(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	first := &movetask.Runner{Store: &crashingStore{MoveTaskStore: w.store, crash: stop}, Queues: w.store, Engine: w.eng,
		Poll: 10 * time.Millisecond, Lease: 200 * time.Millisecond, Owner: "first", Replays: movetask.ForStores(w.eng, w.store)}
	first.Run(ctx) // returns once the crash ended it
	if n := len(w.dest(t)); n != 10 {
		t.Fatalf("the first replica sent %d before dying, want one batch of 10", n)
	}
	got := w.runWith(t, &movetask.Runner{Owner: "second", Replays: movetask.ForStores(w.eng, w.store)}, w.store, task)
	msgs := w.dest(t)
	seen := map[uint64]int{}
	for _, m := range msgs {
		_, r := engine.SplitReplayOf(m.Attributes)
		seen[r.Sequence]++
	}
	t.Logf("task %s, moved %d; destination %d messages", got.Status, got.Moved, len(msgs))
	if got.Status != meta.MoveCompleted || len(msgs) != 40 || len(seen) != 30 {
		t.Fatalf("task %s; destination %d messages of %d sequences; want completed, 40 of 30 (one batch twice)", got.Status, len(msgs), len(seen))
	}
	for seq := uint64(1); seq <= 30; seq++ {
		if want := 1 + btoi(seq <= 10); seen[seq] != want {
			t.Fatalf("sequence %d copied %d times, want %d", seq, seen[seq], want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestReplayDestinationDeleted: a destination deleted while the replay runs ends it failed,
// with its reason, after the batches before.
func TestReplayDestinationDeleted(t *testing.T) {
	w, tp := replayWorld(t, 5)
	del := &onSend{f: func(ctx context.Context) {
		if _, err := w.store.DeleteQueue(ctx, w.dst.ProjectID, w.dst.ID); err != nil {
			t.Error(err)
		}
	}}
	got := w.run(t, w.replayRunner(del), newReplay(w, tp, 1, 5, 10))
	if got.Status != meta.MoveFailed || got.Error != "the destination queue was deleted while the task ran" || got.Moved != 1 {
		t.Fatalf("task ended %s (%q), %d moved; want failed (destination deleted), 1 moved", got.Status, got.Error, got.Moved)
	}
}

// TestReplayTopicDeleted: a topic deleted while its replay runs ends the replay failed.
func TestReplayTopicDeleted(t *testing.T) {
	w, tp := replayWorld(t, 5)
	del := &onSend{f: func(ctx context.Context) {
		if _, _, err := w.store.DeleteTopic(ctx, tp.ProjectID, tp.ID); err != nil {
			t.Error(err)
		}
	}}
	got := w.run(t, w.replayRunner(del), newReplay(w, tp, 1, 5, 10))
	if got.Status != meta.MoveFailed || got.Error != "the topic was deleted while the task ran" {
		t.Fatalf("task ended %s (%q); want failed (topic deleted)", got.Status, got.Error)
	}
}

// TestReplayFIFOCrashStoresOnce: into a fifo queue the copies keep their groups, and the
// batch a crash sends again is a duplicate of the first send (its dedup ids derive from the
// replay and the sequence): every entry is stored once.
func TestReplayFIFOCrashStoresOnce(t *testing.T) {
	w := newWorld(t)
	w.dst.Type = "fifo"
	w.dst.ID, w.dst.Name = ids.New(), "dst.fifo"
	if err := w.store.CreateQueue(t.Context(), w.dst); err != nil {
		t.Fatal(err)
	}
	tp := meta.Topic{ID: ids.New(), ProjectID: w.src.ProjectID, Name: "f.fifo", Type: "fifo", RetentionSeconds: 3600,
		CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := w.store.CreateTopicWithin(t.Context(), tp, 0); err != nil {
		t.Fatal(err)
	}
	et := movetask.EngineTopic(tp)
	if err := w.eng.CreateTopic(t.Context(), et); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 20; i++ {
		m := engine.PublishMessage{Message: engine.Message{Body: strconv.Itoa(i), GroupID: "g" + strconv.Itoa(i%2)}}
		if _, err := w.eng.Publish(t.Context(), et, []engine.PublishMessage{m}); err != nil {
			t.Fatal(err)
		}
	}
	task := newReplay(w, tp, 1, 20, 100) // batches of 10
	if err := w.store.CreateMoveTask(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	first := &movetask.Runner{Store: &crashingStore{MoveTaskStore: w.store, crash: stop}, Queues: w.store, Engine: w.eng,
		Poll: 10 * time.Millisecond, Lease: 200 * time.Millisecond, Owner: "first", Replays: movetask.ForStores(w.eng, w.store)}
	first.Run(ctx)
	got := w.runWith(t, &movetask.Runner{Owner: "second", Replays: movetask.ForStores(w.eng, w.store)}, w.store, task)
	msgs := w.dest(t)
	seen := map[uint64]bool{}
	for _, m := range msgs {
		_, r := engine.SplitReplayOf(m.Attributes)
		if r == nil || seen[r.Sequence] || m.GroupID != "g"+strconv.FormatUint(r.Sequence%2, 10) {
			t.Fatalf("copy %+v (replayOf %+v): want each sequence once, in its group", m, r)
		}
		seen[r.Sequence] = true
	}
	if got.Status != meta.MoveCompleted || len(seen) != 20 {
		t.Fatalf("task %s; %d sequences stored, want completed and 20", got.Status, len(seen))
	}
}
