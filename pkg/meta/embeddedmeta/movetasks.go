package embeddedmeta

// Move tasks, in the same bbolt file as the rest:
//
//	moves    queue id ‖ meta.MoveTaskKey(task id) -> JSON of the task (a queue's tasks are one
//	         key range, newest first)
//	moverun  queue id -> task id of its running task (at most one per queue), then the
//	         task's source id when it differs from the key (a replay: the key is its
//	         destination, meta.MoveTask.RunQueue, and the source its topic)
//	moveproj project id ‖ queue id -> task id: the project's running tasks (at most
//	         meta.MaxRunningMoveTasks), written and deleted with moverun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/internal/pagecursor"
)

var (
	bMoves    = []byte("moves")
	bMoveRun  = []byte("moverun")
	bMoveProj = []byte("moveproj")
)

// projectRunning counts a project's running tasks (a prefix of at most
// meta.MaxRunningMoveTasks keys).
func projectRunning(tx *bolt.Tx, p ids.ID) int {
	n := 0
	c := tx.Bucket(bMoveProj).Cursor()
	for k, _ := c.Seek(p[:]); k != nil && bytes.HasPrefix(k, p[:]); k, _ = c.Next() {
		n++
	}
	return n
}

var _ meta.MoveTaskStore = (*Store)(nil)

func moveKey(q, t ids.ID) []byte { return cat(q, []byte(meta.MoveTaskKey(t))) }

func moveNotFound(id ids.ID) error { return meta.NotFound(meta.KindMoveTask, id) }

// CreateMoveTask stores a new running task unless its queue has one running.
func (s *Store) CreateMoveTask(_ context.Context, t meta.MoveTask) error {
	rq := t.RunQueue()
	if t.ID.IsZero() || t.QueueID.IsZero() || rq.IsZero() {
		return meta.ZeroID("task or queue")
	}
	t = t.Clone()
	t.Status, t.Version = meta.MoveRunning, 1
	return s.update(func(tx *bolt.Tx) error {
		run := tx.Bucket(bMoveRun)
		if cur := run.Get(rq[:]); cur != nil {
			return meta.MoveTaskRunning(rq, ids.ID{})
		}
		if projectRunning(tx, t.ProjectID) >= meta.MaxRunningMoveTasks {
			return meta.RunningQuota()
		}
		v := t.ID[:]
		if rq != t.QueueID {
			v = cat(t.ID, t.QueueID[:])
		}
		if err := run.Put(rq[:], v); err != nil {
			return err
		}
		if err := tx.Bucket(bMoveProj).Put(cat(t.ProjectID, rq[:]), t.ID[:]); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bMoves), moveKey(t.QueueID, t.ID), t)
	})
}

func getMove(tx *bolt.Tx, q, id ids.ID) (meta.MoveTask, error) {
	var t meta.MoveTask
	ok, err := getJSON(tx.Bucket(bMoves), moveKey(q, id), &t)
	if err != nil {
		return meta.MoveTask{}, err
	}
	if !ok {
		return meta.MoveTask{}, moveNotFound(id)
	}
	return t.Clone(), nil
}

// GetMoveTask reads one task of a queue.
func (s *Store) GetMoveTask(_ context.Context, queueID, taskID ids.ID) (meta.MoveTask, error) {
	var t meta.MoveTask
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		t, err = getMove(tx, queueID, taskID)
		return err
	})
	return t, err
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
	limit := pg.Size()
	var out []meta.MoveTask
	more := false
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bMoves).Cursor()
		prefix := queueID[:]
		k, v := c.Seek(cat(queueID, []byte(after)))
		if after != "" && k != nil && bytes.Equal(k, cat(queueID, []byte(after))) {
			k, v = c.Next()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(out) == limit {
				more = true
				return nil
			}
			var t meta.MoveTask
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("corrupt move task %x: %w", k, err)
			}
			out = append(out, t.Clone())
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if more {
		next = pagecursor.Encode(pagecursor.Cursor{List: list, After: meta.MoveTaskKey(out[len(out)-1].ID)})
	}
	return out, next, nil
}

// RunningMoveTasks lists every running task.
func (s *Store) RunningMoveTasks(context.Context) ([]meta.MoveTask, error) {
	var out []meta.MoveTask
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bMoveRun).ForEach(func(k, v []byte) error {
			q, ok1 := ids.FromBytes(k)
			id, ok2 := ids.FromBytes(v[:min(len(v), 16)])
			if !ok1 || !ok2 {
				return nil
			}
			if len(v) == 32 { // a replay: the key is its destination, the source follows
				q, _ = ids.FromBytes(v[16:])
			}
			t, err := getMove(tx, q, id)
			if err != nil {
				return err
			}
			out = append(out, t)
			return nil
		})
	})
	return out, err
}

// UpdateMoveTask replaces a task if its stored Version is t.Version; a task that leaves
// running frees its queue.
func (s *Store) UpdateMoveTask(_ context.Context, t meta.MoveTask) (meta.MoveTask, error) {
	var next meta.MoveTask
	err := s.update(func(tx *bolt.Tx) error {
		cur, err := getMove(tx, t.QueueID, t.ID)
		if err != nil {
			return err
		}
		if cur.Version != t.Version || (cur.Status != meta.MoveRunning && t.Status == meta.MoveRunning) {
			return meta.ErrMoveTaskConflict
		}
		next = t.Clone()
		next.ProjectID, next.StartedAt = cur.ProjectID, cur.StartedAt
		next.Version = cur.Version + 1
		next.TopicID, next.Destination = cur.TopicID, cur.Destination
		if rq := cur.RunQueue(); cur.Status == meta.MoveRunning && next.Status != meta.MoveRunning {
			if err := tx.Bucket(bMoveRun).Delete(rq[:]); err != nil {
				return err
			}
			if err := tx.Bucket(bMoveProj).Delete(cat(cur.ProjectID, rq[:])); err != nil {
				return err
			}
		}
		return putJSON(tx.Bucket(bMoves), moveKey(t.QueueID, t.ID), next)
	})
	if err != nil {
		return meta.MoveTask{}, err
	}
	return next, nil
}
