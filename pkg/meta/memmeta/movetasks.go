package memmeta

import (
	"cmp"
	"context"
	"slices"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/internal/pagecursor"
)

var _ meta.MoveTaskStore = (*Store)(nil)

func moveNotFound(id ids.ID) error { return meta.NotFound(meta.KindMoveTask, id) }

// CreateMoveTask stores a new running task unless its queue has one running or its project
// meta.MaxRunningMoveTasks.
func (s *Store) CreateMoveTask(_ context.Context, t meta.MoveTask) error {
	if t.ID.IsZero() || t.QueueID.IsZero() || t.RunQueue().IsZero() {
		return meta.ZeroID("task or queue")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	running := 0
	for _, o := range s.moves {
		if o.RunQueue() == t.RunQueue() && o.Status == meta.MoveRunning {
			return meta.MoveTaskRunning(t.RunQueue(), o.ID)
		}
		if o.ProjectID == t.ProjectID && o.Status == meta.MoveRunning {
			running++
		}
	}
	if running >= meta.MaxRunningMoveTasks {
		return meta.RunningQuota()
	}
	t = t.Clone()
	t.Status, t.Version = meta.MoveRunning, 1
	s.moves[t.ID] = t
	return nil
}

// GetMoveTask reads one task of a queue.
func (s *Store) GetMoveTask(_ context.Context, queueID, taskID ids.ID) (meta.MoveTask, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.moves[taskID]
	if !ok || t.QueueID != queueID {
		return meta.MoveTask{}, moveNotFound(taskID)
	}
	return t, nil
}

// ListMoveTasks lists a queue's tasks, newest first.
func (s *Store) ListMoveTasks(_ context.Context, queueID ids.ID, pg meta.Page) ([]meta.MoveTask, string, error) {
	list := "moves:" + queueID.String()
	after := ""
	if pg.Cursor != "" {
		var err error
		if after, err = pagecursor.Decode(pg.Cursor, list, "", func(a string) bool { return len(a) == 32 }); err != nil {
			return nil, "", err
		}
	}
	s.mu.Lock()
	var all []meta.MoveTask
	for _, t := range s.moves {
		if t.QueueID == queueID {
			all = append(all, t)
		}
	}
	s.mu.Unlock()
	key := func(t meta.MoveTask) string { return meta.MoveTaskKey(t.ID) }
	slices.SortFunc(all, func(a, b meta.MoveTask) int { return cmp.Compare(key(a), key(b)) })
	out, last := page(all, key, after, pg.Size())
	next := ""
	if last != "" {
		next = pagecursor.Encode(pagecursor.Cursor{List: list, After: last})
	}
	return slices.Clone(out), next, nil
}

// RunningMoveTasks lists every running task.
func (s *Store) RunningMoveTasks(context.Context) ([]meta.MoveTask, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []meta.MoveTask
	for _, t := range s.moves {
		if t.Status == meta.MoveRunning {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b meta.MoveTask) int { return cmp.Compare(a.ID.String(), b.ID.String()) })
	return out, nil
}

// UpdateMoveTask replaces a task if its stored Version is t.Version.
func (s *Store) UpdateMoveTask(_ context.Context, t meta.MoveTask) (meta.MoveTask, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.moves[t.ID]
	if !ok || cur.QueueID != t.QueueID {
		return meta.MoveTask{}, moveNotFound(t.ID)
	}
	if cur.Version != t.Version || (cur.Status != meta.MoveRunning && t.Status == meta.MoveRunning) {
		return meta.MoveTask{}, meta.ErrMoveTaskConflict
	}
	next := t.Clone()
	next.ProjectID, next.StartedAt = cur.ProjectID, cur.StartedAt
	next.TopicID, next.Destination = cur.TopicID, cur.Destination
	next.Version = cur.Version + 1
	s.moves[t.ID] = next
	return next, nil
}
