package movetask_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/movetask"
)

// budget records what the runner charges.
type budget struct {
	mu       sync.Mutex
	project  ids.ID
	requests int
	bytes    int64
}

func (b *budget) Charge(ctx context.Context, project ids.ID, requests int, bytes int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.project, b.requests, b.bytes = project, b.requests+requests, b.bytes+bytes
	return ctx.Err() == nil
}

// world is a runner's surroundings: the embedded engine and the memory store, with two
// queues of one project.
type world struct {
	eng      *embeddedengine.Engine
	store    *memmeta.Store
	src, dst meta.Queue
}

func newWorld(t *testing.T) *world {
	t.Helper()
	eng, err := embeddedengine.Open(filepath.Join(t.TempDir(), "m.db"), clock.Real{}, embeddedengine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	w := &world{eng: eng, store: memmeta.New()}
	p := ids.New()
	if err := w.store.CreateProject(t.Context(), meta.Project{ID: p, Name: "p", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []*meta.Queue{&w.src, &w.dst} {
		*q = meta.Queue{ID: ids.New(), ProjectID: p, Name: ids.New().String(), Type: "standard", CreatedAt: time.Now(),
			VisibilityTimeoutSeconds: 30, RetentionSeconds: 3600}
		if err := w.store.CreateQueue(t.Context(), *q); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// run starts a runner on t's task and answers the task once it ended.
func (w *world) run(t *testing.T, r *movetask.Runner, task meta.MoveTask) meta.MoveTask {
	t.Helper()
	if err := w.store.CreateMoveTask(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	return w.runWith(t, r, w.store, task)
}

// runWith runs a stored task with the runner reading queues from qs.
func (w *world) runWith(t *testing.T, r *movetask.Runner, qs movetask.Queues, task meta.MoveTask) meta.MoveTask {
	t.Helper()
	r.Store, r.Queues, r.Engine, r.Poll = w.store, qs, w.eng, 10*time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		got, err := w.store.GetMoveTask(t.Context(), task.QueueID, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != meta.MoveRunning {
			return got
		}
		time.Sleep(5 * time.Millisecond) // the store has no change feed to await
	}
	t.Fatal("the task is still running after 30 s")
	return meta.MoveTask{}
}

// TestRunnerChargesMovedBytes: every batch of a task is charged to its project's budgets —
// a request each, and the bytes of the messages it moves (a count pass charges no bytes).
func TestRunnerChargesMovedBytes(t *testing.T) {
	w := newWorld(t)
	body := strings.Repeat("m", 10_000)
	var msgs []engine.Message
	for range 25 {
		msgs = append(msgs, engine.Message{Body: body, Attributes: map[string]string{"k": "v"}})
	}
	if _, err := w.eng.Send(t.Context(), w.src.Engine(nil), msgs); err != nil {
		t.Fatal(err)
	}
	b := &budget{}
	task := meta.MoveTask{ID: ids.New(), ProjectID: w.src.ProjectID, QueueID: w.src.ID, Destination: w.dst.ID,
		MaxPerSecond: 100, Status: meta.MoveRunning, StartedAt: time.Now().Add(time.Second), Counting: true}
	got := w.run(t, &movetask.Runner{Budget: b}, task)
	if got.Status != meta.MoveCompleted || got.Moved != 25 || got.ToMove != 25 {
		t.Fatalf("task ended %+v", got)
	}
	want := 25 * engine.PayloadBytes(body, map[string]string{"k": "v"})
	b.mu.Lock()
	defer b.mu.Unlock()
	// 100 a second: batches of 10, so 3 to count and 3 to move.
	t.Logf("charged %d requests and %d bytes for 25 messages moved (%d bytes)", b.requests, b.bytes, want)
	if b.bytes != want || b.requests != 6 || b.project != w.src.ProjectID {
		t.Fatalf("charged %d requests, %d bytes to %s; want 6 requests, %d bytes to %s", b.requests, b.bytes, b.project, want, w.src.ProjectID)
	}
}

// onMove runs f once, at the first batch that moved something (its charge), then charges
// nothing.
type onMove struct {
	once sync.Once
	f    func()
}

func (o *onMove) Charge(ctx context.Context, _ ids.ID, _ int, bytes int64) bool {
	if bytes > 0 {
		o.once.Do(o.f)
	}
	return ctx.Err() == nil
}

// TestMoveTaskDestinationDeleted: a destination deleted while the task runs ends the task
// failed, with its reason; the messages not yet moved stay in the source (they used to go
// on into the deleted queue's storage, counted as moved, where nothing reads them).
func TestMoveTaskDestinationDeleted(t *testing.T) {
	w := newWorld(t)
	var msgs []engine.Message
	for i := range 5 {
		msgs = append(msgs, engine.Message{Body: strings.Repeat("x", i+1)})
	}
	if _, err := w.eng.Send(t.Context(), w.src.Engine(nil), msgs); err != nil {
		t.Fatal(err)
	}
	// 10 a second: one message a batch. The destination goes after the first.
	del := &onMove{f: func() {
		if _, err := w.store.DeleteQueue(t.Context(), w.dst.ProjectID, w.dst.ID); err != nil {
			t.Error(err)
		}
		if err := w.eng.DeleteQueue(t.Context(), w.dst.ID); err != nil {
			t.Error(err)
		}
	}}
	task := meta.MoveTask{ID: ids.New(), ProjectID: w.src.ProjectID, QueueID: w.src.ID, Destination: w.dst.ID,
		MaxPerSecond: 10, Status: meta.MoveRunning, StartedAt: time.Now().Add(time.Second)}
	got := w.run(t, &movetask.Runner{Budget: del}, task)
	st, err := w.eng.Stats(t.Context(), w.src.Engine(nil))
	if err != nil {
		t.Fatal(err)
	}
	ghost, err := w.eng.Stats(t.Context(), w.dst.Engine(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("task %s (%q), moved %d; source holds %d, the deleted destination %d", got.Status, got.Error, got.Moved, st.Visible, ghost.Visible)
	if got.Status != meta.MoveFailed || !strings.Contains(got.Error, "destination queue was deleted") || got.Moved != 1 {
		t.Fatalf("task ended %s (%q) with %d moved; want failed (destination deleted) with 1 moved", got.Status, got.Error, got.Moved)
	}
	if st.Visible != 4 || ghost.Visible != 0 {
		t.Fatalf("source holds %d, the deleted destination %d; want 4 and 0", st.Visible, ghost.Visible)
	}
}

// staleQueues is a metadata cache that has not seen a delete yet: at the nth read of queue id
// it deletes it (store and engine) and still answers it.
type staleQueues struct {
	movetask.Queues
	id    ids.ID
	n     int
	reads int
	del   func()
}

func (s *staleQueues) GetQueueByID(ctx context.Context, id ids.ID) (meta.Queue, error) {
	q, err := s.Queues.GetQueueByID(ctx, id)
	if id == s.id {
		if s.reads++; s.reads == s.n {
			s.del()
		}
	}
	return q, err
}

// TestMoveTaskDestinationDeletedStale: a replica whose cache still has the destination moves
// a batch into it after its deletion; the runner reads it again after the batch, moves that
// batch back to the source, wipes the deleted queue's remains and fails the task.
func TestMoveTaskDestinationDeletedStale(t *testing.T) {
	w := newWorld(t)
	var msgs []engine.Message
	for i := range 5 {
		msgs = append(msgs, engine.Message{Body: strings.Repeat("x", i+1)})
	}
	if _, err := w.eng.Send(t.Context(), w.src.Engine(nil), msgs); err != nil {
		t.Fatal(err)
	}
	// Reads of the destination: the chooser's, then before and after each batch. The 4th
	// (before the second batch) deletes it and answers it as it was.
	qs := &staleQueues{Queues: w.store, id: w.dst.ID, n: 4, del: func() {
		if _, err := w.store.DeleteQueue(t.Context(), w.dst.ProjectID, w.dst.ID); err != nil {
			t.Error(err)
		}
		if err := w.eng.DeleteQueue(t.Context(), w.dst.ID); err != nil {
			t.Error(err)
		}
	}}
	task := meta.MoveTask{ID: ids.New(), ProjectID: w.src.ProjectID, QueueID: w.src.ID, Destination: w.dst.ID,
		MaxPerSecond: 10, Status: meta.MoveRunning, StartedAt: time.Now().Add(time.Second)}
	r := &movetask.Runner{}
	if err := w.store.CreateMoveTask(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	got := w.runWith(t, r, qs, task)
	st, err := w.eng.Stats(t.Context(), w.src.Engine(nil))
	if err != nil {
		t.Fatal(err)
	}
	ghost, err := w.eng.Stats(t.Context(), w.dst.Engine(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("task %s (%q), moved %d; source holds %d, the deleted destination %d", got.Status, got.Error, got.Moved, st.Visible, ghost.Visible)
	if got.Status != meta.MoveFailed || got.Moved != 1 || st.Visible != 4 || ghost.Visible != 0 {
		t.Fatalf("task %s, %d moved; source %d, deleted destination %d; want failed, 1, 4, 0", got.Status, got.Moved, st.Visible, ghost.Visible)
	}
}
