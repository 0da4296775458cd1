package embeddedengine

import (
	"context"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Purge removes every message sent before it, at most once per engine.PurgeInterval per queue
// (engine clock). The index forgets them at once; their records are deleted in the background
// (a restart skips them by their sequence number).
func (e *Engine) Purge(ctx context.Context, q engine.Queue) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	now := e.nowMs()
	e.mu.Lock()
	qi := e.queueOf(q.ID, q.Type)
	if next := qi.lastPurge + engine.PurgeInterval.Milliseconds(); qi.lastPurge != 0 && now < next {
		e.mu.Unlock()
		d := time.Duration(next-now) * time.Millisecond
		return &engine.Refusal{Err: engine.ErrPurgeTooSoon, Wait: d}
	}
	qi.lastPurge = now
	done := e.purge(qi)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return err
	}
	e.notify(q.ID)
	e.clean(q.ID)
	return nil
}

// purge forgets every message of qi and records the watermark. Call under e.mu.
func (e *Engine) purge(qi *queue) <-chan error {
	qi.purgeSeq = qi.nextSeq
	qi.clear()
	var w writes
	qi.clearParks(&w) // what comes back after a purge is new: its old place was purged
	w.putQueue(qi)
	return e.commit(&w)
}

// clean asks the cleaner to delete a queue's purged records.
func (e *Engine) clean(q ids.ID) {
	select {
	case e.cleaning <- q:
	default: // the next Sweep asks again
		e.mu.Lock()
		if qi := e.queues[q]; qi != nil {
			qi.dirty = true
		}
		e.mu.Unlock()
	}
}

// DeleteQueue removes every message of the queue and its dedup windows; its handles go stale.
func (e *Engine) DeleteQueue(ctx context.Context, id ids.ID) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	e.mu.Lock()
	qi := e.queues[id]
	if qi == nil {
		e.mu.Unlock()
		e.notify(id)
		return nil
	}
	qi.purgeSeq = qi.nextSeq
	qi.lastPurge = 0
	qi.clear()
	var w writes
	qi.clearParks(&w)
	w.putQueue(qi)
	for k := range qi.dedup {
		w.del(bucketDedup, dedupKey(id, k))
	}
	qi.dedup, qi.dedupQ = map[string]dedupEntry{}, nil
	w.drops = append(w.drops, id) // an empty queue's bucket goes now; the cleaner drops the rest
	delete(e.cons, id)
	for b := range e.marks[id] { // the topics' copy marks kept with the queue
		w.del(bucketMarks, pairKey(id, b))
	}
	delete(e.marks, id)
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return err
	}
	e.notify(id)
	e.clean(id)
	return nil
}

// Stats counts the queue's messages by state. Counts are exact; expired messages count until a
// receive or Sweep removes them. OldestSentAt is exact up to exactCountLimit messages, and
// beyond that the oldest among the first messages to expire.
func (e *Engine) Stats(ctx context.Context, q engine.Queue) (engine.Stats, error) {
	if err := ctxErr(ctx); err != nil {
		return engine.Stats{}, err
	}
	if err := e.check(); err != nil {
		return engine.Stats{}, err
	}
	now := e.nowMs()
	st := engine.Stats{Partitions: 1}
	e.mu.Lock()
	defer e.mu.Unlock()
	qi := e.queues[q.ID]
	if qi == nil {
		return st, nil
	}
	qi.advance(now)
	st.Visible, st.InFlight, st.Delayed = int64(qi.visible.len()), int64(qi.inflight.len()), int64(qi.delayed.len()+qi.held)
	st.InFlight += int64(len(qi.msgs)) - st.Visible - st.InFlight - st.Delayed // claims in progress
	// Messages past their retention are gone, swept or not.
	qi.expiry.eachExpired(now, func(m *msg) {
		switch m.st {
		case stVisible:
			st.Visible--
		case stDelayed, stHeld:
			st.Delayed--
		default: // in flight, or being claimed
			st.InFlight--
		}
	})
	st.Truncated = st.Visible > exactCountLimit || st.InFlight > exactCountLimit || st.Delayed > exactCountLimit
	st.ParkedGroups = int64(len(qi.parked))
	var oldest int64
	consider := func(m *msg) {
		if m.expiresAt > now && (oldest == 0 || m.sentAt < oldest) {
			oldest = m.sentAt
		}
	}
	if len(qi.msgs) <= exactCountLimit {
		for _, m := range qi.msgs {
			consider(m)
		}
	} else {
		for _, m := range qi.expiry.a[:min(64, len(qi.expiry.a))] {
			consider(m)
		}
	}
	st.OldestSentAt = timeOrZero(oldest)
	return st, nil
}

// ActiveQueues lists the queues holding messages, dedup windows or purged records still on
// disk: all the work Sweep has.
func (e *Engine) ActiveQueues(ctx context.Context) ([]ids.ID, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []ids.ID
	for id, qi := range e.queues {
		if len(qi.msgs) > 0 || len(qi.dedupQ) > 0 || qi.dirty {
			out = append(out, id)
		}
	}
	return out, nil
}

// Sweep deletes expired messages and dedup windows (in bounded chunks) and restarts the
// cleaning of purged records, for the queues given.
func (e *Engine) Sweep(ctx context.Context, qs []engine.Queue) error {
	if err := e.check(); err != nil {
		return err
	}
	for _, q := range qs {
		for {
			if err := ctxErr(ctx); err != nil {
				return err
			}
			more, err := e.sweepChunk(q)
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
	return nil
}

func (e *Engine) sweepChunk(q engine.Queue) (bool, error) {
	now := e.nowMs()
	var w writes
	n := 0
	e.mu.Lock()
	qi := e.queues[q.ID]
	if qi == nil {
		e.mu.Unlock()
		return false, nil
	}
	if qi.dirty {
		qi.dirty = false
		select {
		case e.cleaning <- q.ID:
		default:
			qi.dirty = true
		}
	}
	for qi.expiry.len() > 0 && qi.expiry.top().expiresAt <= now && n < sweepChunk {
		m := qi.expiry.top()
		qi.remove(m)
		w.delMsg(qi, m)
		n++
	}
	for len(qi.dedupQ) > 0 && qi.dedupQ[0].expiresAt <= now && n < sweepChunk {
		it := qi.dedupQ[0]
		qi.dedupQ = qi.dedupQ[1:]
		if d, ok := qi.dedup[it.key]; ok && d.expiresAt == it.expiresAt {
			delete(qi.dedup, it.key)
			w.del(bucketDedup, dedupKey(qi.id, it.key))
		}
		n++
	}
	if len(qi.dedupQ) == 0 {
		qi.dedupQ = nil
	}
	done := e.commit(&w)
	e.mu.Unlock()
	return n >= sweepChunk, wait(done)
}
