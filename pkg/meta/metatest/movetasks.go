package metatest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// RunMoveTasks runs the conformance suite of meta.MoveTaskStore; newStore returns a fresh,
// empty store. It pins: one running task per queue, checked atomically (concurrent creates:
// exactly one wins); a task's end frees its queue; a finished task never runs again; updates
// are compare-and-set on Version; listings are newest first and page to a "" cursor; a
// replay is listed by its topic and holds its destination queue.
func RunMoveTasks(t *testing.T, newStore func(t *testing.T) meta.MoveTaskStore) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s meta.MoveTaskStore)
	}{
		{"CreateGetUpdate", testMoveCreateGetUpdate},
		{"OneRunningPerQueue", testMoveOneRunning},
		{"ListNewestFirst", testMoveList},
		{"RunningPerProjectBound", testMoveRunningPerProject},
		{"Replays", testReplays},
		{"ReplaysCountInProjectBound", testReplaysCountInProjectBound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func newMoveTask(q ids.ID) meta.MoveTask {
	return meta.MoveTask{ID: ids.New(), ProjectID: ids.New(), QueueID: q, MaxPerSecond: 500,
		Filter: `{"reason":"x"}`, StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)}
}

func testMoveCreateGetUpdate(t *testing.T, s meta.MoveTaskStore) {
	ctx := t.Context()
	tk := newMoveTask(ids.New())
	tk.Version, tk.Action, tk.DryRun, tk.Counting = 9, meta.ActionDelete, true, true
	if err := s.CreateMoveTask(ctx, tk); err != nil {
		t.Fatalf("CreateMoveTask: %v", err)
	}
	got, err := s.GetMoveTask(ctx, tk.QueueID, tk.ID)
	if err != nil {
		t.Fatalf("GetMoveTask: %v", err)
	}
	if got.Version != 1 || got.Status != meta.MoveRunning || got.Filter != tk.Filter || got.Action != meta.ActionDelete || !got.DryRun || !got.Counting || !got.StartedAt.Equal(tk.StartedAt) || got.MaxPerSecond != 500 {
		t.Fatalf("stored %+v", got)
	}
	if _, err := s.GetMoveTask(ctx, ids.New(), tk.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("GetMoveTask on another queue: %v, want not_found", err)
	}
	got.Moved, got.Cursor, got.Owner, got.LeaseUntil = 10, "c1", "r1", tk.StartedAt.Add(time.Minute)
	up, err := s.UpdateMoveTask(ctx, got)
	if err != nil || up.Version != 2 || up.Moved != 10 || up.Cursor != "c1" {
		t.Fatalf("UpdateMoveTask: %+v, %v", up, err)
	}
	if _, err := s.UpdateMoveTask(ctx, got); !errors.Is(err, meta.ErrMoveTaskConflict) {
		t.Fatalf("update of a stale version: %v, want ErrMoveTaskConflict", err)
	}
	if run, err := s.RunningMoveTasks(ctx); err != nil || !hasTask(run, tk.ID) {
		t.Fatalf("RunningMoveTasks = %v, %v; want the task", run, err)
	}
	up.Status, up.FinishedAt = meta.MoveCompleted, tk.StartedAt.Add(time.Hour)
	done, err := s.UpdateMoveTask(ctx, up)
	if err != nil || done.Status != meta.MoveCompleted || !done.FinishedAt.Equal(up.FinishedAt) {
		t.Fatalf("completing: %+v, %v", done, err)
	}
	if run, err := s.RunningMoveTasks(ctx); err != nil || hasTask(run, tk.ID) {
		t.Fatalf("RunningMoveTasks after the end = %v, %v", run, err)
	}
	done.Status = meta.MoveRunning
	if _, err := s.UpdateMoveTask(ctx, done); !errors.Is(err, meta.ErrMoveTaskConflict) {
		t.Fatalf("running a finished task again: %v, want ErrMoveTaskConflict", err)
	}
}

func hasTask(ts []meta.MoveTask, id ids.ID) bool {
	for _, t := range ts {
		if t.ID == id {
			return true
		}
	}
	return false
}

func testMoveOneRunning(t *testing.T, s meta.MoveTaskStore) {
	ctx := t.Context()
	q := ids.New()
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	var winner meta.MoveTask
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := newMoveTask(q)
			err := s.CreateMoveTask(ctx, tk)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
				winner = tk
			case errors.Is(err, meta.ErrMoveTaskRunning):
				lost++
			default:
				t.Errorf("CreateMoveTask: %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || lost != 4 {
		t.Fatalf("concurrent creates: %d won, %d refused; want 1, 4", won, lost)
	}
	// Another queue is not blocked; the end of the winner frees q.
	if err := s.CreateMoveTask(ctx, newMoveTask(ids.New())); err != nil {
		t.Fatalf("another queue's task: %v", err)
	}
	cur, _ := s.GetMoveTask(ctx, q, winner.ID)
	cur.Status = meta.MoveCancelled
	if _, err := s.UpdateMoveTask(ctx, cur); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if err := s.CreateMoveTask(ctx, newMoveTask(q)); err != nil {
		t.Fatalf("a new task after the end of the first: %v", err)
	}
}

func testMoveList(t *testing.T, s meta.MoveTaskStore) {
	ctx := t.Context()
	q := ids.New()
	var made []ids.ID
	for range 5 {
		tk := newMoveTask(q)
		if err := s.CreateMoveTask(ctx, tk); err != nil {
			t.Fatal(err)
		}
		tk.Version = 1
		tk.Status = meta.MoveCompleted
		if _, err := s.UpdateMoveTask(ctx, tk); err != nil {
			t.Fatal(err)
		}
		made = append(made, tk.ID)
		time.Sleep(2 * time.Millisecond) // UUIDv7 ids order by their millisecond
	}
	var got []ids.ID
	cursor := ""
	for range 10 {
		ts, next, err := s.ListMoveTasks(ctx, q, meta.Page{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListMoveTasks: %v", err)
		}
		for _, tk := range ts {
			got = append(got, tk.ID)
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if len(got) != 5 {
		t.Fatalf("listed %d tasks, want 5", len(got))
	}
	for i := range got {
		if got[i] != made[4-i] {
			t.Fatalf("listing order %v, want newest first %v", got, made)
		}
	}
	// A full last page ends the list.
	if ts, next, err := s.ListMoveTasks(ctx, q, meta.Page{Limit: 5}); err != nil || len(ts) != 5 || next != "" {
		t.Fatalf("a full last page: %d tasks, cursor %q, %v", len(ts), next, err)
	}
	_, _, err := s.ListMoveTasks(ctx, q, meta.Page{Cursor: "garbage"})
	wantRefusal(t, err, meta.ErrBadCursor, apierr.InvalidArgument, "ListMoveTasks with a bad cursor")
	wantRefusal(t, s.CreateMoveTask(ctx, newMoveTask(ids.ID{})), meta.ErrZeroID, apierr.InvalidArgument, "CreateMoveTask with a zero queue id")
}

// testMoveRunningPerProject: a project runs at most meta.MaxRunningMoveTasks tasks (each on
// its own queue); the next is refused quota_exceeded (details.limit runningMoveTasks), another
// project is not, and a task's end frees a place.
func testMoveRunningPerProject(t *testing.T, s meta.MoveTaskStore) {
	ctx := t.Context()
	p := ids.New()
	var running []meta.MoveTask
	for range meta.MaxRunningMoveTasks {
		tk := newMoveTask(ids.New())
		tk.ProjectID = p
		if err := s.CreateMoveTask(ctx, tk); err != nil {
			t.Fatalf("CreateMoveTask %d: %v", len(running), err)
		}
		running = append(running, tk)
	}
	over := newMoveTask(ids.New())
	over.ProjectID = p
	wantQuota(t, s.CreateMoveTask(ctx, over), meta.LimitRunningMoveTasks, "one task past the bound")
	if got, err := s.GetMoveTask(ctx, over.QueueID, over.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("the refused task was stored: %+v, %v", got, err)
	}
	// A queue with a running task still answers move_task_running, not the quota.
	again := newMoveTask(running[0].QueueID)
	again.ProjectID = p
	wantIs(t, s.CreateMoveTask(ctx, again), meta.ErrMoveTaskRunning, "a second task on a running queue")
	if err := s.CreateMoveTask(ctx, newMoveTask(ids.New())); err != nil {
		t.Fatalf("another project's task: %v", err)
	}
	cur, err := s.GetMoveTask(ctx, running[0].QueueID, running[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	cur.Status = meta.MoveCancelled
	if _, err := s.UpdateMoveTask(ctx, cur); err != nil {
		t.Fatalf("ending a task: %v", err)
	}
	if err := s.CreateMoveTask(ctx, over); err != nil {
		t.Fatalf("a task after one of %d ended: %v", meta.MaxRunningMoveTasks, err)
	}
}
