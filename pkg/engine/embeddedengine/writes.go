package embeddedengine

import (
	"bytes"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// writes collects one operation's record changes; they are encoded under e.mu (so they are a
// snapshot of the index) and applied by the committer.
type writes struct {
	puts    []kv
	dels    []kv // value unused
	moves   []dlqMove
	counts  []countAdd      // move-task counters (move.go)
	touched map[ids.ID]bool // queues to wake after the commit
	// takes read payloads inside the commit, before its deletions: an at-most-once receive
	// deletes what it hands out, so the payload exists only within the transaction.
	takes []take
	// drops are queues whose payload bucket is deleted if the commit leaves it empty
	drops []ids.ID
}

// take copies the payload stored at k into *dst during the commit (nil when gone).
type take struct {
	k   []byte
	dst *[]byte
}

type kv struct {
	bucket []byte
	k, v   []byte
}

// dlqMove copies a message's payload from the source queue to the dead-letter queue, adding
// the dead-letter information, inside the commit (the payload is only on disk).
type dlqMove struct {
	from, to []byte
	info     engine.DeadLetterInfo
	// strip: a move task's move, which leaves the message without dead-letter information.
	strip bool
}

func (w *writes) put(b []byte, k, v []byte) { w.puts = append(w.puts, kv{b, k, v}) }

func (w *writes) del(b []byte, k []byte) { w.dels = append(w.dels, kv{bucket: b, k: k}) }

func (w *writes) wake(q ids.ID) {
	if w.touched == nil {
		w.touched = map[ids.ID]bool{}
	}
	w.touched[q] = true
}

func (w *writes) empty() bool {
	return len(w.puts) == 0 && len(w.dels) == 0 && len(w.moves) == 0 && len(w.counts) == 0 && len(w.takes) == 0 && len(w.drops) == 0
}

func (w *writes) putMsg(q *queue, m *msg) {
	w.put(bucketState, key(q.id, m.id), encodeState(m, q.keyOfMsg(m)))
}

func (w *writes) putQueue(q *queue) { w.put(bucketQueue, slices.Clone(q.id[:]), encodeQueue(q)) }

func (w *writes) delMsg(q *queue, m *msg) {
	k := key(q.id, m.id)
	w.del(bucketState, k)
	w.del(bucketPayloads, k)
	if m.barrier {
		w.del(bucketBarrier, k)
	}
}

func (w *writes) apply(tx *bolt.Tx) error {
	ps := payloadsIn(tx)
	// Moves first: they read payloads that the deletions below remove.
	for _, mv := range w.moves {
		raw := ps.get(mv.from)
		if raw == nil {
			continue // already moved by an earlier transaction
		}
		pl, err := decodePayload(raw)
		if err != nil {
			continue // an undecodable message is dropped rather than blocking every commit
		}
		info := mv.info
		pl.DeadLetter = &info
		if mv.strip {
			pl.DeadLetter = nil
		}
		if err := ps.put(mv.to, encodePayload(pl)); err != nil {
			return err
		}
	}
	for _, t := range w.takes {
		if raw := ps.get(t.k); raw != nil {
			*t.dst = slices.Clone(raw) // bolt's memory is valid only inside the transaction
		}
	}
	if err := applyCounts(tx, w.counts); err != nil {
		return err
	}
	for _, d := range w.dels {
		if err := bucketOp(tx, ps, d, false); err != nil {
			return err
		}
	}
	for _, p := range w.puts {
		if err := bucketOp(tx, ps, p, true); err != nil {
			return err
		}
	}
	for _, q := range w.drops {
		if err := ps.dropIfEmpty(q[:]); err != nil {
			return err
		}
	}
	return nil
}

// bucketOp applies one put or deletion; bucketPayloads stands for the per-queue payload store.
func bucketOp(tx *bolt.Tx, ps *payloadStore, r kv, put bool) error {
	switch {
	case bytes.Equal(r.bucket, bucketPayloads) && put:
		return ps.put(r.k, r.v)
	case bytes.Equal(r.bucket, bucketPayloads):
		return ps.del(r.k)
	case put:
		return tx.Bucket(r.bucket).Put(r.k, r.v)
	default:
		return tx.Bucket(r.bucket).Delete(r.k)
	}
}

// commit submits w (call under e.mu) and returns the wait for it; nothing to write answers at once.
func (e *Engine) commit(w *writes) <-chan error {
	if w.empty() {
		done := make(chan error, 1)
		done <- nil
		return done
	}
	return e.submit(w.apply)
}

func (e *Engine) wakeAll(w *writes) {
	for q := range w.touched {
		e.notify(q)
	}
}
