package embeddedengine

import (
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/ids"
)

// Barrier messages (docs/delivery-options.md#barrier-messages) in the index. Messages carry the
// queue-wide seq of their acceptance, so the rules read directly: with B the oldest barrier
// present, a message newer than B is held (stHeld: in no heap, so no receive sees it), and B itself
// is held while any older message is present (q.before counts them). When a message older than B
// leaves, the count drops and at 0 B is placed; when B leaves, the index recomputes the barriers
// and places what they no longer hold (a pass over the queue's messages, once per barrier).
// A queue with no barrier pays one length check per placement.
//
// A barrier's flag is the record in bucket "b" (key queue id ‖ message id), so the state
// record's format is unchanged; start-up reads it after indexing the queue's messages.

// holds reports whether m waits for a barrier (call with q.bars non-empty). Messages
// received already are never held: nothing older than a barrier can arrive after it.
func (q *queue) holds(m *msg) bool {
	if m.attempt > 0 && m.st != stHeld {
		return false
	}
	b := q.bars[0]
	if m == b {
		return q.before > 0
	}
	return m.seq > b.seq
}

// addBarrier records a new barrier (the newest message: its seq is the highest).
func (q *queue) addBarrier(m *msg) {
	if len(q.bars) == 0 {
		q.before = len(q.msgs) - 1 // every other message present is older
	}
	q.bars = append(q.bars, m)
}

// removed updates the barriers after m left the queue.
func (q *queue) removed(m *msg) {
	if m.barrier {
		q.rebarrier(q.lastNow)
		return
	}
	if m.seq > q.bars[0].seq {
		return
	}
	q.before--
	if b := q.bars[0]; q.before <= 0 && b.st == stHeld {
		q.place(b, q.lastNow)
	}
}

// rebarrier recomputes the barriers from the messages present and places or holds each
// message accordingly.
func (q *queue) rebarrier(now int64) {
	q.bars = q.bars[:0]
	for _, m := range q.msgs {
		if m.barrier {
			q.bars = append(q.bars, m)
		}
	}
	slices.SortFunc(q.bars, func(a, b *msg) int { return cmpU64(a.seq, b.seq) })
	q.before = 0
	if len(q.bars) > 0 {
		for _, m := range q.msgs {
			if !m.barrier && m.seq < q.bars[0].seq {
				q.before++
			}
		}
	}
	for _, m := range q.msgs {
		hold := len(q.bars) > 0 && q.holds(m)
		if hold != (m.st == stHeld) {
			q.place(m, now)
		}
	}
}

// loadBarriers marks the barrier messages recorded in bucket "b" (start-up, after indexing
// every message) and holds what they hold.
func loadBarriers(tx *bolt.Tx, queues map[ids.ID]*queue, now int64) {
	touched := map[*queue]bool{}
	_ = tx.Bucket(bucketBarrier).ForEach(func(k, _ []byte) error {
		qid, ok1 := ids.FromBytes(k[:min(16, len(k))])
		mid, ok2 := ids.FromBytes(k[min(16, len(k)):])
		q := queues[qid]
		if !ok1 || !ok2 || q == nil || q.fifo {
			return nil
		}
		if m := q.msgs[mid]; m != nil {
			m.barrier = true
			touched[q] = true
		}
		return nil // a purged one's record goes with the cleaner
	})
	for q := range touched {
		q.rebarrier(now)
	}
}

// browsable is what Browse of state st looks through: the state's heap, and for delayed the
// held messages too (accepted, not deliverable before their barrier, as Stats counts them;
// their at is when they would be visible but for the barrier). Finding the held ones costs a
// pass over the queue's messages, only while some are held.
func (q *queue) browsable(st uint8) []*msg {
	ms := q.heapOf(st).a
	if st != stDelayed || q.held == 0 {
		return ms
	}
	ms = slices.Clip(ms)
	for _, m := range q.msgs {
		if m.st == stHeld {
			ms = append(ms, m)
		}
	}
	return ms
}
