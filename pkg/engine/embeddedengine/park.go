package embeddedengine

// Parked groups: a fifo queue's poison policies park and parkGroup (engine.PoisonPolicy,
// docs/fifo.md). A parked group is kept out of the ready heap (queue.refresh), so no receive
// serves it; each of its messages sent to the dead-letter queue is recorded with its sequence
// number, and a move that brings one back (moveTo) puts it at that place in the group, not at
// its end; the last one back ends the parking. New sends to the group take higher sequence
// numbers and wait behind, so the group's order holds however they and the move interleave.
//
// Records (bucket "gp", key queue id ‖ kind ‖ rest):
//
//	'g' ‖ group id   -> string reason (the dead-letter that parked the group)
//	'i' ‖ message id -> string group id, uvarint sequence number (one of its messages out)

import (
	"context"
	"encoding/binary"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/internal/wire"
	"github.com/queueshq/queues/pkg/ids"
)

var bucketParks = []byte("gp")

// parking is a parked group's state: why, and which of its messages are out.
type parking struct {
	reason string
	out    map[ids.ID]uint64 // message id -> its sequence number (its place in the group)
}

func parkKey(q ids.ID, kind byte, rest []byte) []byte {
	k := make([]byte, 0, 17+len(rest))
	k = append(k, q[:]...)
	k = append(k, kind)
	return append(k, rest...)
}

// isParked tells whether group g is parked.
func (q *queue) isParked(g string) bool { return q.parked[g] != nil }

// park records m (of group g) as out for g's parking, parking g if it was not (reason:
// the dead-letter's). Call before m leaves the group, under e.mu.
func (q *queue) park(w *writes, g string, m *msg, reason string) {
	if q.parked == nil {
		q.parked = map[string]*parking{}
	}
	p := q.parked[g]
	if p == nil {
		p = &parking{out: map[ids.ID]uint64{}}
		q.parked[g] = p
	}
	p.reason = reason
	p.out[m.id] = m.seq
	w.put(bucketParks, parkKey(q.id, 'g', []byte(g)), wire.AppendString([]byte{recVersion}, reason))
	v := wire.AppendString([]byte{recVersion}, g)
	w.put(bucketParks, parkKey(q.id, 'i', m.id[:]), binary.AppendUvarint(v, m.seq))
	if grp := q.groups[g]; grp != nil {
		q.refresh(grp)
	}
}

// unpark ends g's parking, dropping the records of its messages still out (a release), and
// serves the group again. Call under e.mu.
func (q *queue) unpark(w *writes, g string) {
	p := q.parked[g]
	if p == nil {
		return
	}
	for id := range p.out {
		w.del(bucketParks, parkKey(q.id, 'i', id[:]))
	}
	delete(q.parked, g)
	w.del(bucketParks, parkKey(q.id, 'g', []byte(g)))
	if grp := q.groups[g]; grp != nil {
		q.refresh(grp)
	}
}

// backSeq answers the place (sequence number) of message id coming back to group g when a
// parking of g has it out, and forgets it there (ending the parking when it was the last).
// ok is false for any other message. Call under e.mu, then add the message at seq.
func (q *queue) backSeq(w *writes, g string, id ids.ID) (seq uint64, last, ok bool) {
	p := q.parked[g]
	if p == nil {
		return 0, false, false
	}
	seq, ok = p.out[id]
	if !ok {
		return 0, false, false
	}
	delete(p.out, id)
	w.del(bucketParks, parkKey(q.id, 'i', id[:]))
	return seq, len(p.out) == 0, true
}

// clearParks forgets every parking of q (purge, delete). Call under e.mu.
func (q *queue) clearParks(w *writes) {
	for g := range q.parked {
		q.unpark(w, g)
	}
}

// deadLetterParking dead-letters m under qi's poison policy: its group parks, and under
// parkGroup every later message of the group (whatever its state) follows it to the
// dead-letter queue in order, with engine.ParkGroupReason. It answers the ids that followed.
// Call under e.mu.
func (e *Engine) deadLetterParking(w *writes, qi *queue, q engine.Queue, m *msg, reason string, now int64) []ids.ID {
	dlq, _ := redriveOf(q)
	policy := q.Parking()
	if policy == engine.PoisonContinue || m.g == nil {
		e.moveOut(w, qi, m, dlq, reason, now)
		return nil
	}
	g := m.g.id
	var follow []*msg
	if policy == engine.PoisonParkGroup {
		for f := m.gnext; f != nil; f = f.gnext {
			follow = append(follow, f)
		}
	}
	qi.park(w, g, m, reason)
	e.moveOut(w, qi, m, dlq, reason, now)
	var ids []ids.ID
	for _, f := range follow {
		ids = append(ids, f.id)
		if f.expiresAt <= now {
			qi.remove(f)
			w.delMsg(qi, f)
			continue
		}
		qi.park(w, g, f, reason)
		e.moveOut(w, qi, f, dlq, engine.ParkGroupReason, now)
	}
	return ids
}

// ReleaseGroup ends a parked group's parking.
func (e *Engine) ReleaseGroup(ctx context.Context, q engine.Queue, groupID string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if q.Type != engine.FIFO {
		return errNoGroups
	}
	if err := e.check(); err != nil {
		return err
	}
	var w writes
	e.mu.Lock()
	qi := e.queues[q.ID]
	switch {
	case qi != nil && qi.isParked(groupID):
		qi.unpark(&w, groupID)
		w.wake(qi.id)
	case qi != nil && qi.groups[groupID] != nil:
		e.mu.Unlock()
		return engine.ErrGroupNotParked
	default:
		e.mu.Unlock()
		return engine.ErrNoSuchGroup
	}
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return err
	}
	e.wakeAll(&w)
	return nil
}

// loadParks reads the parkings of the queues loaded (before their messages, so that a parked
// group never enters the ready heap).
func loadParks(tx *bolt.Tx, queues map[ids.ID]*queue) {
	c := tx.Bucket(bucketParks).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) < 18 || len(v) < 1 || v[0] != recVersion {
			continue
		}
		qid, _ := ids.FromBytes(k[:16])
		q := queues[qid]
		if q == nil {
			continue
		}
		if q.parked == nil {
			q.parked = map[string]*parking{}
		}
		r := wire.NewReader(v[1:])
		switch k[16] {
		case 'g':
			g := string(k[17:])
			p := q.parked[g]
			if p == nil {
				p = &parking{out: map[ids.ID]uint64{}}
				q.parked[g] = p
			}
			p.reason = r.String()
		case 'i':
			id, ok := ids.FromBytes(k[17:])
			g, seq := r.String(), r.Uvarint()
			if !ok || !r.OK() {
				continue
			}
			p := q.parked[g]
			if p == nil {
				p = &parking{out: map[ids.ID]uint64{}}
				q.parked[g] = p
			}
			p.out[id] = seq
		}
	}
}

// parkedNames are q's parked groups after `after`, in order.
func (q *queue) parkedNames(after string) []string {
	var out []string
	for g := range q.parked {
		if g > after {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}
