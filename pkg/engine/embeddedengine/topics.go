package embeddedengine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Topics (docs/topics.md, engine.Topics). A topic's log and keyed state are on disk, in buckets of
// their own (topiccodec.go); its counters, fifo dedup windows and bindings are in memory
// under e.mu, as a queue's index is, and written with every change. Publishes assign
// sequences under e.mu and hand their writes to the committer in that order, so the disk
// always holds a prefix of the log: a read never sees an entry without the ones before it.
//
// A keyed publish needs the key's state before it, which may still be queued for the
// committer: a topic keeps the states of its uncommitted publishes (pending) until their
// commit is done, and reads the disk only for the others.

var _ engine.Topics = (*Engine)(nil)

// topic is one topic's in-memory part.
type topic struct {
	id, project ids.ID
	fifo        bool
	// active: published to since the fan-out last marked it idle (ActiveTopics).
	active bool
	// wakeAt is when an idle topic is listed again (unix ms; 0: never): IdleTopic's wakeAt.
	wakeAt int64
	// last is the last sequence assigned, first the oldest the log holds (last+1: none).
	last, first uint64
	// logBytes and stateBytes are the stored bytes of the log and the keyed state; pb is the
	// project's total, moved with them.
	logBytes, stateBytes int64
	pb                   *int64
	dedup                map[string]topicDedup
	dedupQ               []dedupItem
	bindings             map[ids.ID]*engine.Binding
	pending              map[string]*pendingState
}

// topicDedup is a fifo publish's dedup window: republishes until expiresAt answer id and seq.
type topicDedup struct {
	id        ids.ID
	seq       uint64
	expiresAt int64
}

// pendingState is a key's state written by a publish whose commit is not done (nil st: the
// publish deleted it).
type pendingState struct {
	st  *engine.StateEntry
	seq uint64
}

// topicLease is a topic's fan-out lease: held by owner until until.
type topicLease struct {
	owner string
	until time.Time
}

func newTopic(id ids.ID, fifo bool) *topic {
	return &topic{id: id, fifo: fifo, first: 1, dedup: map[string]topicDedup{}, bindings: map[ids.ID]*engine.Binding{},
		pending: map[string]*pendingState{}}
}

// topicOf returns the topic's in-memory part, creating it (a topic appears with its first
// use, as a queue does). Call with e.mu held.
func (e *Engine) topicOf(t engine.Topic) *topic {
	ti := e.topics[t.ID]
	if ti == nil {
		ti = newTopic(t.ID, t.Type == engine.FIFO)
		ti.project, ti.pb = t.Project, e.projectBytes(t.Project)
		e.topics[t.ID] = ti
	}
	if !t.Project.IsZero() && ti.project != t.Project {
		n := ti.logBytes + ti.stateBytes
		*ti.pb -= n
		ti.project, ti.pb = t.Project, e.projectBytes(t.Project)
		*ti.pb += n
	}
	return ti
}

// loadTopics rebuilds the topics' in-memory part and the copies' high-water marks.
func (e *Engine) loadTopics() error {
	return e.db.View(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketTopic).ForEach(func(k, v []byte) error {
			id, ok := ids.FromBytes(k)
			ti, err := decodeTopic(id, v)
			if !ok || err != nil {
				e.log.Error("embeddedengine: skipping a malformed topic record", "key", fmt.Sprintf("%x", k))
				return nil //nolint:nilerr // one bad record must not stop the others from loading
			}
			ti.pb = e.projectBytes(ti.project)
			*ti.pb += ti.logBytes + ti.stateBytes
			e.topics[id] = ti
			return nil
		}); err != nil {
			return err
		}
		if err := tx.Bucket(bucketBindings).ForEach(func(k, v []byte) error {
			ti := e.topics[ids.ID(k[:min(16, len(k))])]
			bid, ok := ids.FromBytes(k[min(16, len(k)):])
			b, err := decodeBinding(bid, v)
			if ti != nil && ok && err == nil {
				ti.bindings[bid] = b
			}
			return nil
		}); err != nil {
			return err
		}
		if err := tx.Bucket(bucketTopicDedup).ForEach(func(k, v []byte) error {
			ti := e.topics[ids.ID(k[:min(16, len(k))])]
			d, err := decodeTopicDedup(v)
			if ti != nil && err == nil { // expired ones too: the next publish deletes them
				ti.dedup[string(k[16:])] = d
				ti.dedupQ = append(ti.dedupQ, dedupItem{key: string(k[16:]), expiresAt: d.expiresAt})
			}
			return nil
		}); err != nil {
			return err
		}
		for _, ti := range e.topics {
			slices.SortFunc(ti.dedupQ, func(a, b dedupItem) int { return cmpI64(a.expiresAt, b.expiresAt) })
		}
		return tx.Bucket(bucketMarks).ForEach(func(k, v []byte) error {
			q, ok1 := ids.FromBytes(k[:min(16, len(k))])
			b, ok2 := ids.FromBytes(k[min(16, len(k)):])
			mark, n := binary.Uvarint(v)
			if ok1 && ok2 && n > 0 {
				e.setMark(q, b, mark)
			}
			return nil
		})
	})
}

// setMark records binding b's high-water mark in queue q (call under e.mu).
func (e *Engine) setMark(q, b ids.ID, mark uint64) {
	if e.marks[q] == nil {
		e.marks[q] = map[ids.ID]uint64{}
	}
	e.marks[q][b] = mark
}

// CreateTopic records the topic (an empty log at sequence 0).
func (e *Engine) CreateTopic(ctx context.Context, t engine.Topic) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	e.mu.Lock()
	ti := e.topicOf(t)
	rec := encodeTopic(ti)
	done := e.submit(func(tx *bolt.Tx) error { return tx.Bucket(bucketTopic).Put(slices.Clone(t.ID[:]), rec) })
	e.mu.Unlock()
	return wait(done)
}

// DeleteTopic removes the topic's log, state, dedup windows and bindings (with their marks
// in the queues); its bytes leave the project's total.
func (e *Engine) DeleteTopic(ctx context.Context, t engine.Topic) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	e.mu.Lock()
	var marks [][]byte
	if ti := e.topics[t.ID]; ti != nil {
		*ti.pb -= ti.logBytes + ti.stateBytes
		for _, b := range ti.bindings {
			delete(e.marks[b.Queue], b.ID)
			marks = append(marks, pairKey(b.Queue, b.ID))
		}
		delete(e.topics, t.ID)
	}
	delete(e.leases, t.ID)
	done := e.submit(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{topicLogBucket(t.ID), topicStateBucket(t.ID)} {
			if tx.Bucket(name) != nil {
				if err := tx.DeleteBucket(name); err != nil {
					return err
				}
			}
		}
		for _, b := range [][]byte{bucketBindings, bucketTopicDedup} {
			if err := deletePrefix(tx.Bucket(b), t.ID[:]); err != nil {
				return err
			}
		}
		for _, k := range marks {
			if err := tx.Bucket(bucketMarks).Delete(k); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketTopic).Delete(slices.Clone(t.ID[:]))
	})
	e.mu.Unlock()
	return wait(done)
}

// deletePrefix deletes every key of b that starts with prefix.
func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	var doomed [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		doomed = append(doomed, slices.Clone(k))
	}
	for _, k := range doomed {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Bounds describes the log from the in-memory counters.
func (e *Engine) Bounds(ctx context.Context, t engine.Topic) (engine.LogBounds, error) {
	if err := ctxErr(ctx); err != nil {
		return engine.LogBounds{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ti := e.topics[t.ID]
	if ti == nil {
		return engine.LogBounds{First: 1}, nil
	}
	return engine.LogBounds{First: ti.first, Last: ti.last, Bytes: ti.logBytes + ti.stateBytes}, nil
}

// WatchTopic registers a watcher of the topic's publishes.
func (e *Engine) WatchTopic(topic ids.ID) (<-chan struct{}, func()) { return e.twatch.Watch(topic) }
