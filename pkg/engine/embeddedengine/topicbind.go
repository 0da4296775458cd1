package embeddedengine

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// putBinding returns the write of one binding's record (encoded now, under e.mu).
func putBinding(topic ids.ID, b *engine.Binding) func(tx *bolt.Tx) error {
	k, v := pairKey(topic, b.ID), encodeBinding(b)
	return func(tx *bolt.Tx) error { return tx.Bucket(bucketBindings).Put(k, v) }
}

// Bind adds a binding; binding an id the topic has changes nothing.
func (e *Engine) Bind(ctx context.Context, t engine.Topic, b engine.Binding) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	e.mu.Lock()
	ti := e.topicOf(t)
	if ti.bindings[b.ID] != nil {
		e.mu.Unlock()
		return nil
	}
	nb := b
	ti.bindings[b.ID] = &nb
	done := e.submit(putBinding(t.ID, &nb))
	e.mu.Unlock()
	return wait(done)
}

// SetFilter replaces a binding's filter; the fan-out reads bindings after the entries it
// copies, so an entry published after this answers is judged by the new filter.
func (e *Engine) SetFilter(ctx context.Context, t engine.Topic, binding ids.ID, filter string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	e.mu.Lock()
	var b *engine.Binding
	if ti := e.topics[t.ID]; ti != nil {
		b = ti.bindings[binding]
	}
	if b == nil {
		e.mu.Unlock()
		return &engine.Refusal{Err: engine.ErrNoBinding, Binding: binding}
	}
	b.Filter = filter
	done := e.submit(putBinding(t.ID, b))
	e.mu.Unlock()
	return wait(done)
}

// Unbind removes a binding and its high-water mark in queue q.
func (e *Engine) Unbind(ctx context.Context, t engine.Topic, binding ids.ID, q ids.ID) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	e.mu.Lock()
	if ti := e.topics[t.ID]; ti != nil {
		delete(ti.bindings, binding)
	}
	delete(e.marks[q], binding)
	bk, mk := pairKey(t.ID, binding), pairKey(q, binding)
	done := e.submit(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketBindings).Delete(bk); err != nil {
			return err
		}
		return tx.Bucket(bucketMarks).Delete(mk)
	})
	e.mu.Unlock()
	return wait(done)
}

// Bindings lists the topic's bindings in id order.
func (e *Engine) Bindings(ctx context.Context, t engine.Topic) ([]engine.Binding, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ti := e.topics[t.ID]
	if ti == nil {
		return nil, nil
	}
	out := make([]engine.Binding, 0, len(ti.bindings))
	for _, b := range ti.bindings {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b engine.Binding) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return out, nil
}

// AdvanceBindings records the fan-out's progress. A binding's sequence never goes back: an
// advance of a replica that lost the lease only saves less work.
func (e *Engine) AdvanceBindings(ctx context.Context, t engine.Topic, as []engine.Advance) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	now := e.clk.Now()
	e.mu.Lock()
	ti := e.topics[t.ID]
	var puts []func(tx *bolt.Tx) error
	for _, a := range as {
		var b *engine.Binding
		if ti != nil {
			b = ti.bindings[a.Binding]
		}
		if b == nil {
			continue
		}
		b.Sequence = max(b.Sequence, a.Through)
		b.Copied += a.Copied
		b.Failed += a.Failed
		if a.LastError != "" {
			b.LastError, b.LastErrorAt = a.LastError, fromMs(now.UnixMilli())
		}
		puts = append(puts, putBinding(t.ID, b))
	}
	if len(puts) == 0 {
		e.mu.Unlock()
		return nil
	}
	done := e.submit(func(tx *bolt.Tx) error {
		for _, p := range puts {
			if err := p(tx); err != nil {
				return err
			}
		}
		return nil
	})
	e.mu.Unlock()
	return wait(done)
}

// Copy stores a binding's batch in queue q through the send path (store), skipping every
// message at or below the binding's high-water mark in q and raising the mark in the same
// transaction as the store.
func (e *Engine) Copy(ctx context.Context, q engine.Queue, b engine.CopyBatch) ([]error, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	errs := make([]error, len(b.Messages))
	if len(b.Messages) == 0 {
		return errs, nil
	}
	fifo := q.Type == engine.FIFO
	now, ret := e.nowMs(), retention(q).Milliseconds()
	var w writes
	var stored []engine.Message
	e.mu.Lock()
	qi, changed := e.queueFor(q)
	mark := e.marks[q.ID][b.Binding]
	top := mark
	for i, cm := range b.Messages {
		top = max(top, cm.Sequence)
		if _, there := qi.msgs[cm.ID]; cm.Sequence <= mark || there {
			continue // stored earlier
		}
		m := cm.Message
		m.Key, m.Barrier, m.Priority, m.Delay = "", false, 0, nil // a copy is a plain message
		dk := ""
		if fifo && m.DedupID != "" {
			dk = explicitDedupKey(m.DedupID)
			if d, ok := qi.dedup[dk]; ok && d.expiresAt > now {
				if d.id != cm.ID {
					errs[i] = &engine.DedupTaken{DedupID: m.DedupID}
				}
				continue
			}
		}
		size := uint32(engine.PayloadBytes(m.Body, m.Attributes))
		if q.MaxStoredBytes > 0 && *qi.pb+int64(size) > q.MaxStoredBytes {
			errs[i] = &engine.StoredBytesExceeded{Limit: q.MaxStoredBytes}
			continue
		}
		pl := encodePayload(&payload{Body: m.Body, Attributes: m.Attributes})
		store(&w, qi, q, m, newMsg{id: cm.ID, dk: dk, pl: pl, size: size, now: now, ret: ret})
		stored = append(stored, m)
	}
	if top > mark {
		e.setMark(q.ID, b.Binding, top)
		w.put(bucketMarks, pairKey(q.ID, b.Binding), binary.AppendUvarint(nil, top))
	}
	if len(stored) > 0 || changed {
		w.putQueue(qi)
	}
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return nil, err
	}
	if len(stored) > 0 {
		e.watch.NotifyDigests(q.ID, sendDigests(stored))
	}
	return errs, nil
}

// LeaseTopic takes or renews the topic's fan-out lease (in this process: one node).
func (e *Engine) LeaseTopic(ctx context.Context, topic ids.ID, owner string, ttl time.Duration) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	now := e.clk.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if l, ok := e.leases[topic]; ok && l.owner != owner && now.Before(l.until) {
		return false, nil
	}
	e.leases[topic] = topicLease{owner: owner, until: now.Add(ttl)}
	return true, nil
}

// ReleaseTopic gives the lease up if owner holds it.
func (e *Engine) ReleaseTopic(ctx context.Context, topic ids.ID, owner string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if l, ok := e.leases[topic]; ok && l.owner == owner {
		delete(e.leases, topic)
	}
	return nil
}

// ActiveTopics lists the topics published to since they were last marked idle, and the idle
// ones whose wake time has passed.
func (e *Engine) ActiveTopics(ctx context.Context) ([]ids.ID, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	now := e.nowMs()
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []ids.ID
	for id, ti := range e.topics {
		if ti.active || (ti.wakeAt != 0 && ti.wakeAt <= now) {
			out = append(out, id)
		}
	}
	return out, nil
}

// IdleTopic takes the topic off ActiveTopics and sets its wake time, unless it was published
// to after last.
func (e *Engine) IdleTopic(ctx context.Context, id ids.ID, last uint64, wakeAt time.Time) error {
	var at int64
	if !wakeAt.IsZero() {
		at = max(wakeAt.UnixMilli(), 1)
	}
	return e.setActive(ctx, id, func(ti *topic) bool {
		if ti.last > last || (!ti.active && ti.wakeAt == at) {
			return false
		}
		ti.active, ti.wakeAt = false, at
		return true
	})
}

// WakeTopic lists the topic in ActiveTopics, as a publish does.
func (e *Engine) WakeTopic(ctx context.Context, id ids.ID) error {
	return e.setActive(ctx, id, func(ti *topic) bool {
		if ti.active {
			return false
		}
		ti.active = true
		return true
	})
}

// setActive applies change to the topic's work-list fields under e.mu and, when it changed
// them, writes the topic's record.
func (e *Engine) setActive(ctx context.Context, id ids.ID, change func(*topic) bool) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	e.mu.Lock()
	ti := e.topics[id]
	if ti == nil || !change(ti) {
		e.mu.Unlock()
		return nil
	}
	k, rec := slices.Clone(id[:]), encodeTopic(ti)
	done := e.submit(func(tx *bolt.Tx) error { return tx.Bucket(bucketTopic).Put(k, rec) })
	e.mu.Unlock()
	return wait(done)
}
