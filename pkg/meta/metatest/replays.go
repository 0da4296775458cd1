package metatest

import (
	"errors"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

func newReplay(topic, dest ids.ID) meta.MoveTask {
	tk := newMoveTask(topic)
	tk.TopicID, tk.Destination, tk.FromSequence, tk.ToSequence = topic, dest, 3, 90
	return tk
}

// testReplays: a replay (docs/topics.md#replay) is stored and listed under its topic with its
// range, and holds its destination queue while it runs — a second replay into that queue, or a move
// task from it, is refused move_task_running, while the topic may replay into another queue at
// once; the replay's end frees the queue.
func testReplays(t *testing.T, s meta.MoveTaskStore) {
	ctx := t.Context()
	topic, dest := ids.New(), ids.New()
	rp := newReplay(topic, dest)
	if err := s.CreateMoveTask(ctx, rp); err != nil {
		t.Fatalf("CreateMoveTask(replay): %v", err)
	}
	got, err := s.GetMoveTask(ctx, topic, rp.ID)
	if err != nil || got.TopicID != topic || got.Destination != dest || got.FromSequence != 3 || got.ToSequence != 90 || !got.IsReplay() {
		t.Fatalf("GetMoveTask(topic, replay) = %+v, %v", got, err)
	}
	if ts, _, err := s.ListMoveTasks(ctx, topic, meta.Page{}); err != nil || len(ts) != 1 || ts[0].ID != rp.ID {
		t.Fatalf("ListMoveTasks(topic) = %v, %v", ts, err)
	}
	if run, err := s.RunningMoveTasks(ctx); err != nil || !hasTask(run, rp.ID) {
		t.Fatalf("RunningMoveTasks = %v, %v; want the replay", run, err)
	}
	other := newReplay(ids.New(), dest)
	other.ProjectID = rp.ProjectID
	wantIs(t, s.CreateMoveTask(ctx, other), meta.ErrMoveTaskRunning, "a second replay into the same queue")
	mv := newMoveTask(dest)
	mv.ProjectID = rp.ProjectID
	wantIs(t, s.CreateMoveTask(ctx, mv), meta.ErrMoveTaskRunning, "a move task from a queue a replay runs into")
	elsewhere := newReplay(topic, ids.New())
	elsewhere.ProjectID = rp.ProjectID
	if err := s.CreateMoveTask(ctx, elsewhere); err != nil {
		t.Fatalf("the topic replaying into another queue: %v", err)
	}
	// An update cannot move the task to another destination or topic.
	got.Destination, got.TopicID, got.Cursor = ids.New(), ids.New(), "42"
	up, err := s.UpdateMoveTask(ctx, got)
	if err != nil || up.Destination != dest || up.TopicID != topic || up.Cursor != "42" {
		t.Fatalf("UpdateMoveTask = %+v, %v", up, err)
	}
	up.Status, up.FinishedAt = meta.MoveCompleted, rp.StartedAt.Add(time.Minute)
	if _, err := s.UpdateMoveTask(ctx, up); err != nil {
		t.Fatalf("completing the replay: %v", err)
	}
	if run, err := s.RunningMoveTasks(ctx); err != nil || hasTask(run, rp.ID) || !hasTask(run, elsewhere.ID) {
		t.Fatalf("RunningMoveTasks after the end = %v, %v", run, err)
	}
	if err := s.CreateMoveTask(ctx, other); err != nil {
		t.Fatalf("a replay into the queue after the first ended: %v", err)
	}
	if err := s.CreateMoveTask(ctx, newReplay(ids.New(), ids.ID{})); !errors.Is(err, meta.ErrZeroID) {
		t.Fatalf("a replay without a destination: %v, want invalid_argument", err)
	}
}

// testReplaysCountInProjectBound: replays count in the project's meta.MaxRunningMoveTasks
// with its move tasks, and a replay's end frees a place.
func testReplaysCountInProjectBound(t *testing.T, s meta.MoveTaskStore) {
	ctx := t.Context()
	p := ids.New()
	var last meta.MoveTask
	for i := range meta.MaxRunningMoveTasks {
		tk := newMoveTask(ids.New())
		if i%2 == 0 {
			tk = newReplay(ids.New(), ids.New())
		}
		tk.ProjectID = p
		if err := s.CreateMoveTask(ctx, tk); err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
		if tk.IsReplay() {
			last = tk
		}
	}
	over := newReplay(ids.New(), ids.New())
	over.ProjectID = p
	wantQuota(t, s.CreateMoveTask(ctx, over), meta.LimitRunningMoveTasks, "a replay past the bound")
	cur, err := s.GetMoveTask(ctx, last.QueueID, last.ID)
	if err != nil {
		t.Fatal(err)
	}
	cur.Status = meta.MoveFailed
	if _, err := s.UpdateMoveTask(ctx, cur); err != nil {
		t.Fatalf("ending a replay: %v", err)
	}
	if err := s.CreateMoveTask(ctx, over); err != nil {
		t.Fatalf("a replay after one ended: %v", err)
	}
}
