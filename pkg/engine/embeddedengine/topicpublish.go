package embeddedengine

import (
	"context"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// pubPlan is a publish worked out under e.mu before anything changes.
type pubPlan struct {
	res     []engine.PublishResult
	entries []engine.LogEntry
	// states are the keys' states after the publish (st nil: deleted) and oldSize their
	// stored bytes before it.
	states  map[string]*pendingState
	oldSize map[string]int64
	dedups  map[string]topicDedup
	// add is the stored bytes the publish adds: its entries and the states' changes.
	add int64
}

// Publish appends msgs to the topic's log and answers once they are on disk, all or
// nothing: a refused merge or the project's byte quota fails the whole publish.
func (e *Engine) Publish(ctx context.Context, t engine.Topic, msgs []engine.PublishMessage) ([]engine.PublishResult, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	now := e.nowMs()
	e.mu.Lock()
	ti := e.topicOf(t)
	p, err := e.planPublish(ti, msgs, now)
	if err == nil && t.MaxStoredBytes > 0 && p.add > 0 && *ti.pb+p.add > t.MaxStoredBytes {
		err = &engine.StoredBytesExceeded{Limit: t.MaxStoredBytes}
	}
	if err != nil {
		e.mu.Unlock()
		return nil, err
	}
	done := e.submit(ti.commitPublish(p, now))
	e.mu.Unlock()
	err = wait(done)
	e.mu.Lock()
	for k, ps := range p.states {
		if ti.pending[k] == ps { // no later publish of the key is pending
			delete(ti.pending, k)
		}
	}
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	e.twatch.Notify(t.ID)
	return p.res, nil
}

// planPublish decides what each message does (a duplicate, or an entry at the next
// sequence, with the key's state merged) without changing anything. Call under e.mu.
func (e *Engine) planPublish(ti *topic, msgs []engine.PublishMessage, now int64) (*pubPlan, error) {
	p := &pubPlan{res: make([]engine.PublishResult, len(msgs)), states: map[string]*pendingState{},
		oldSize: map[string]int64{}, dedups: map[string]topicDedup{}}
	budget := engine.NewMergeBudget()
	at := fromMs(now)
	for i, m := range msgs {
		dk := ""
		if ti.fifo && m.DedupID != "" {
			dk = m.DedupID
			d, ok := p.dedups[dk]
			if !ok {
				d, ok = ti.dedup[dk]
				ok = ok && d.expiresAt > now
			}
			if ok {
				p.res[i] = engine.PublishResult{MessageID: d.id, Sequence: d.seq, Duplicate: true}
				continue
			}
		}
		en := engine.LogEntry{Sequence: ti.last + 1 + uint64(len(p.entries)), MessageID: ids.New(), PublishedAt: at,
			Body: m.Body, Attributes: m.Attributes, Key: m.Key}
		if ti.fifo {
			en.GroupID, en.DedupID = m.GroupID, m.DedupID
		}
		if m.Key != "" {
			cur, err := e.stateBefore(ti, p, m.Key)
			if err != nil {
				return nil, err
			}
			en.Body, en.Attributes, en.Deleted, err = engine.MergeState(budget, i, cur, m)
			if err != nil {
				return nil, err
			}
			ps := &pendingState{seq: en.Sequence}
			if !en.Deleted {
				ps.st = &engine.StateEntry{Key: m.Key, Body: en.Body, Attributes: en.Attributes, Sequence: en.Sequence, PublishedAt: at}
			}
			p.states[m.Key] = ps
		}
		p.add += engine.PayloadBytes(en.Body, en.Attributes)
		if dk != "" {
			p.dedups[dk] = topicDedup{id: en.MessageID, seq: en.Sequence, expiresAt: now + engine.DedupWindow.Milliseconds()}
		}
		p.entries = append(p.entries, en)
		p.res[i] = engine.PublishResult{MessageID: en.MessageID, Sequence: en.Sequence}
	}
	for k, ps := range p.states {
		p.add += stateSize(ps.st) - p.oldSize[k]
	}
	return p, nil
}

func stateSize(st *engine.StateEntry) int64 {
	if st == nil {
		return 0
	}
	return engine.PayloadBytes(st.Body, st.Attributes)
}

// stateBefore is key's state as this publish finds it: as an earlier message of the
// publish left it, else as a pending publish left it, else as the disk holds it.
func (e *Engine) stateBefore(ti *topic, p *pubPlan, key string) (*engine.StateEntry, error) {
	if ps, ok := p.states[key]; ok {
		return ps.st, nil
	}
	var cur *engine.StateEntry
	if ps, ok := ti.pending[key]; ok {
		cur = ps.st
	} else {
		err := e.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(topicStateBucket(ti.id))
			if b == nil {
				return nil
			}
			v := b.Get([]byte(key))
			if v == nil {
				return nil
			}
			st, err := decodeStateEntry([]byte(key), v)
			cur = &st
			return err
		})
		if err != nil {
			return nil, engine.StoreFault("reading a topic's keyed state", err)
		}
	}
	p.oldSize[key] = stateSize(cur)
	return cur, nil
}

// commitPublish applies a plan to the topic's in-memory part and returns its writes (call
// under e.mu, and submit the writes before releasing it).
func (ti *topic) commitPublish(p *pubPlan, now int64) func(tx *bolt.Tx) error {
	var logAdd int64
	type rec struct{ k, v []byte }
	entries := make([]rec, len(p.entries))
	for i := range p.entries {
		en := &p.entries[i]
		logAdd += engine.PayloadBytes(en.Body, en.Attributes)
		entries[i] = rec{seqKey(en.Sequence), encodeEntry(en)}
	}
	ti.last += uint64(len(p.entries))
	ti.logBytes += logAdd
	ti.stateBytes += p.add - logAdd
	*ti.pb += p.add
	ti.active = true // before the entries are appended: the fan-out's work list
	var dedups []rec
	for k, d := range p.dedups {
		ti.dedup[k] = d
		ti.dedupQ = append(ti.dedupQ, dedupItem{key: k, expiresAt: d.expiresAt})
		dedups = append(dedups, rec{topicDedupKey(ti.id, k), encodeTopicDedup(d)})
	}
	expired := ti.expireDedups(now)
	states := map[string][]byte{} // nil: delete
	for k, ps := range p.states {
		ti.pending[k] = ps
		if ps.st != nil {
			states[k] = encodeStateEntry(ps.st)
		} else {
			states[k] = nil
		}
	}
	id, topicRec := slices.Clone(ti.id[:]), encodeTopic(ti)
	return func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketTopic).Put(id, topicRec); err != nil {
			return err
		}
		lb, err := tx.CreateBucketIfNotExists(topicLogBucket(ti.id))
		if err != nil {
			return err
		}
		lb.FillPercent = payloadFill // keys are appended
		for _, r := range entries {
			if err := lb.Put(r.k, r.v); err != nil {
				return err
			}
		}
		if err := putStates(tx, ti.id, states); err != nil {
			return err
		}
		db := tx.Bucket(bucketTopicDedup)
		for _, k := range expired {
			if err := db.Delete(k); err != nil {
				return err
			}
		}
		for _, r := range dedups {
			if err := db.Put(r.k, r.v); err != nil {
				return err
			}
		}
		return nil
	}
}

// putStates writes the states of a publish (nil values delete).
func putStates(tx *bolt.Tx, topic ids.ID, states map[string][]byte) error {
	if len(states) == 0 {
		return nil
	}
	sb, err := tx.CreateBucketIfNotExists(topicStateBucket(topic))
	if err != nil {
		return err
	}
	for k, v := range states {
		if v == nil {
			err = sb.Delete([]byte(k))
		} else {
			err = sb.Put([]byte(k), v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// expireDedups forgets the dedup windows that ended by now and returns their records' keys
// (call under e.mu; the caller deletes the records).
func (ti *topic) expireDedups(now int64) [][]byte {
	var expired [][]byte
	for len(ti.dedupQ) > 0 && ti.dedupQ[0].expiresAt <= now {
		it := ti.dedupQ[0]
		ti.dedupQ = ti.dedupQ[1:]
		if d, ok := ti.dedup[it.key]; ok && d.expiresAt == it.expiresAt {
			delete(ti.dedup, it.key)
			expired = append(expired, topicDedupKey(ti.id, it.key))
		}
	}
	if len(ti.dedupQ) == 0 {
		ti.dedupQ = nil
	}
	return expired
}

// trimDedups deletes the topic's ended dedup windows (Trim: a topic no longer published to
// keeps none).
func (e *Engine) trimDedups(t engine.Topic) error {
	e.mu.Lock()
	ti := e.topics[t.ID]
	var expired [][]byte
	if ti != nil {
		expired = ti.expireDedups(e.nowMs())
	}
	if len(expired) == 0 {
		e.mu.Unlock()
		return nil
	}
	done := e.submit(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTopicDedup)
		for _, k := range expired {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	e.mu.Unlock()
	return wait(done)
}
