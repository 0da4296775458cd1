package embeddedengine

import (
	"context"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// countAdd adds n to a move task's counter (bucket "mv", key source queue id ‖ tag, value a
// uvarint), in the transaction that takes the messages out.
type countAdd struct {
	k []byte
	n int64
}

func movedKey(q ids.ID, tag string) []byte {
	b := make([]byte, 0, 16+len(tag))
	b = append(b, q[:]...)
	return append(b, tag...)
}

func applyCounts(tx *bolt.Tx, cs []countAdd) error {
	b := tx.Bucket(bucketMoved)
	for _, c := range cs {
		old, _ := binary.Uvarint(b.Get(c.k))
		if err := b.Put(c.k, binary.AppendUvarint(nil, old+uint64(c.n))); err != nil {
			return err
		}
	}
	return nil
}

// MoveBatch examines one page of src's visible messages and moves the chosen ones (deletes
// those chosen for engine.Discard). Here a message's move is one transaction: out of src,
// into its destination, and the task's counter, together.
func (e *Engine) MoveBatch(ctx context.Context, src engine.Queue, req engine.MoveRequest) (engine.MoveResult, error) {
	limit := min(max(req.Limit, 1), engine.MaxMoveBatch)
	page, err := e.Browse(ctx, src, engine.BrowseRequest{State: engine.StateVisible, Limit: limit, Cursor: req.Cursor, MaxBytes: engine.MaxMoveBatchBytes})
	if err != nil {
		return engine.MoveResult{}, err
	}
	res := engine.MoveResult{Examined: len(page.Messages), NextCursor: page.NextCursor}
	type pick struct {
		id  ids.ID
		dst *engine.Queue
	}
	var picks []pick
	for _, m := range page.Messages {
		dst, fail := req.Choose(m)
		switch {
		case dst != nil && dst.ID != src.ID:
			picks = append(picks, pick{m.MessageID, dst})
		case fail:
			res.Failed++
		}
	}
	if len(picks) == 0 {
		return res, nil
	}
	if err := e.check(); err != nil {
		return engine.MoveResult{}, err
	}
	now := e.nowMs()
	var w writes
	e.mu.Lock()
	if qi := e.queues[src.ID]; qi != nil {
		qi.advance(now)
		for _, p := range picks {
			m := qi.msgs[p.id]
			if m == nil || m.st != stVisible || m.expiresAt <= now {
				continue // received, settled or expired since the page was read
			}
			if p.dst == engine.Discard {
				qi.remove(m)
				w.delMsg(qi, m)
				w.wake(qi.id) // a fifo group's next message may be available now
			} else {
				e.moveTo(&w, qi, m, *p.dst, now)
			}
			res.Moved++
		}
	}
	if res.Moved > 0 {
		w.counts = append(w.counts, countAdd{k: movedKey(src.ID, req.Tag), n: int64(res.Moved)})
	}
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return engine.MoveResult{}, err
	}
	e.wakeAll(&w)
	return res, nil
}

// moveTo takes m out of qi into dst (same id, group and send time; receiveCount 0; no
// dead-letter information; retention from now). An id dst already holds is not stored twice.
// Call under e.mu.
func (e *Engine) moveTo(w *writes, qi *queue, m *msg, dst engine.Queue, now int64) {
	group := ""
	if m.g != nil {
		group = m.g.id
	}
	qi.remove(m)
	from := key(qi.id, m.id)
	di, _ := e.queueFor(dst)
	if _, dup := di.msgs[m.id]; !dup {
		nm := &msg{id: m.id, seq: di.nextSeq, sentAt: m.sentAt, expiresAt: now + retention(dst).Milliseconds(), at: now, size: m.size,
			base: m.nextBase()}
		if !di.fifo {
			group = ""
		}
		seq, last, back := di.backSeq(w, group, m.id)
		if back { // to its old place in its parked group (park.go)
			nm.seq = seq
		} else {
			di.nextSeq++
		}
		di.add(nm, group, now)
		if last {
			di.unpark(w, group)
		}
		w.moves = append(w.moves, dlqMove{from: from, to: key(di.id, m.id), strip: true})
		w.putMsg(di, nm)
		w.putQueue(di)
		w.wake(di.id)
	}
	w.del(bucketState, from)
	w.del(bucketPayloads, from)
}

// FinishMoves has nothing to finish here: a move is one transaction.
func (e *Engine) FinishMoves(ctx context.Context, src engine.Queue) error { return ctxErr(ctx) }

// MovedCount reads tag's counter.
func (e *Engine) MovedCount(ctx context.Context, src engine.Queue, tag string) (int64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	var n uint64
	err := e.db.View(func(tx *bolt.Tx) error {
		n, _ = binary.Uvarint(tx.Bucket(bucketMoved).Get(movedKey(src.ID, tag)))
		return nil
	})
	if err != nil {
		return 0, engine.StoreUnavailable("move count", err)
	}
	return int64(n), nil
}

// ForgetMoved deletes tag's counter.
func (e *Engine) ForgetMoved(ctx context.Context, src engine.Queue, tag string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	var w writes
	w.del(bucketMoved, movedKey(src.ID, tag))
	e.mu.Lock()
	done := e.commit(&w)
	e.mu.Unlock()
	return wait(done)
}
