package embeddedengine

import (
	"context"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Conflation (docs/lifecycle.md#conflation-and-delta-publish). A standard queue's keyed messages
// that wait never delivered (visible or delayed, receiveCount 0) are in the queue's key index with
// their body and attributes, so a keyed send merges under the engine's lock without reading the
// disk (whose latest writes may still be queued for the committer). A message leaves the index when
// it leaves the waiting state: markTaking (a receive claims it), remove (ack, delete, expiry,
// dead-letter) and clear (purge, queue delete). The key is kept in the state record (codec.go),
// so a restart rebuilds the index from the records of never-received messages.

// keyed is a waiting message of the key index.
type keyed struct {
	m     *msg
	key   string
	body  string
	attrs map[string]string
}

// index adds m as the waiting message of key.
func (q *queue) index(m *msg, key, body string, attrs map[string]string) {
	if q.keys == nil {
		q.keys, q.keyOf = map[string]*keyed{}, map[*msg]*keyed{}
	}
	k := &keyed{m: m, key: key, body: body, attrs: attrs}
	if old := q.keys[key]; old != nil {
		delete(q.keyOf, old.m)
	}
	q.keys[key], q.keyOf[m] = k, k
}

// unkey takes m out of the key index (nothing when it is not there).
func (q *queue) unkey(m *msg) {
	if len(q.keyOf) == 0 {
		return
	}
	if k := q.keyOf[m]; k != nil {
		delete(q.keyOf, m)
		if q.keys[k.key] == k {
			delete(q.keys, k.key)
		}
	}
}

// keyOfMsg is m's conflation key while it waits ("" otherwise), for its state record.
func (q *queue) keyOfMsg(m *msg) string {
	if len(q.keyOf) == 0 {
		return ""
	}
	if k := q.keyOf[m]; k != nil {
		return k.key
	}
	return ""
}

// waiting returns the waiting message of key, or nil.
func (q *queue) waiting(key string, now int64) *keyed {
	k := q.keys[key]
	if k == nil || k.m.attempt != 0 || (k.m.st != stVisible && k.m.st != stDelayed) || k.m.expiresAt <= now {
		return nil
	}
	return k
}

// keyStep is what one keyed message of a send does: merge into into (a waiting message, or
// one stored earlier in the same send: then intoIdx is its index) or, both unset, store a
// new message.
type keyStep struct {
	into    *keyed
	intoIdx int
	body    string
	attrs   map[string]string
	size    uint32
	err     error
}

// planKeys decides, under e.mu and before anything changes, what each keyed message of a
// send does, in order (a key repeated in the batch merges into its earlier message), and the
// stored bytes the send adds; nil steps for unkeyed messages.
func planKeys(qi *queue, q engine.Queue, msgs []engine.Message, sizes []uint32, now int64) ([]*keyStep, int64) {
	var steps []*keyStep
	var add int64
	type cur struct {
		k     *keyed // waiting before the send
		idx   int    // or stored by message idx of this send
		body  string
		attrs map[string]string
		size  uint32
	}
	var seen map[string]*cur
	budget := engine.NewMergeBudget().For(q) // one try under the lock: never spent (MergeBudgetBytes)
	// A send with a barrier, or one accepted while a barrier is pending, is not conflated
	// (barriers over conflation: docs/delivery-options.md#barrier-messages): a message accepted
	// behind a barrier must not reach a consumer by changing one accepted before it, and held keyed
	// messages are ordinary messages (as on Redis, where they wait in the hold, out of the
	// partitions' key index).
	unkeyed := qi.fifo || len(qi.bars) > 0
	for _, m := range msgs {
		unkeyed = unkeyed || m.Barrier
	}
	for i, m := range msgs {
		if m.Key == "" || unkeyed {
			add += int64(sizes[i])
			continue
		}
		if steps == nil {
			steps, seen = make([]*keyStep, len(msgs)), map[string]*cur{}
		}
		c := seen[m.Key]
		if c == nil {
			if k := qi.waiting(m.Key, now); k != nil {
				c = &cur{k: k, idx: -1, body: k.body, attrs: k.attrs, size: k.m.size}
			}
		}
		if c == nil {
			steps[i] = &keyStep{intoIdx: -1, body: m.Body, attrs: m.Attributes, size: sizes[i]}
			seen[m.Key] = &cur{idx: i, body: m.Body, attrs: m.Attributes, size: sizes[i]}
			add += int64(sizes[i])
			continue
		}
		body, attrs, err := engine.Merged(budget, c.body, c.attrs, m)
		if err != nil {
			steps[i] = &keyStep{err: err}
			continue
		}
		size := uint32(engine.PayloadBytes(body, attrs))
		steps[i] = &keyStep{into: c.k, intoIdx: c.idx, body: body, attrs: attrs, size: size}
		add += int64(size) - int64(c.size)
		c.body, c.attrs, c.size = body, attrs, size
		seen[m.Key] = c
	}
	return steps, add
}

// sendLimit plans a send's keyed messages (planKeys) and refuses a send that would take the
// project's stored bytes past q.MaxStoredBytes (call under e.mu, before changing anything).
func (e *Engine) sendLimit(qi *queue, q engine.Queue, msgs []engine.Message, dks []string, sizes []uint32, now int64) ([]*keyStep, error) {
	steps, add := planKeys(qi, q, msgs, sizes, now)
	if steps == nil {
		return nil, overLimit(qi, q, msgs, dks, sizes, now)
	}
	if q.MaxStoredBytes > 0 && add > 0 && *qi.pb+add > q.MaxStoredBytes {
		return nil, &engine.StoredBytesExceeded{Limit: q.MaxStoredBytes}
	}
	return steps, nil
}

// mergeStep carries out a step that merges (or failed), given the messages this send stored
// so far (by index).
func (e *Engine) mergeStep(w *writes, qi *queue, s *keyStep, stored []*msg) engine.SendResult {
	if s.err != nil {
		return engine.SendResult{Partition: -1, Err: s.err}
	}
	k := s.into
	if k == nil {
		k = qi.keyOf[stored[s.intoIdx]]
	}
	if k == nil { // cannot happen: the message stored earlier in this send is indexed
		return engine.SendResult{Partition: -1, Err: engine.ErrNoMessage}
	}
	e.merge(w, qi, k, s)
	return engine.SendResult{MessageID: k.m.id, Merged: true}
}

// merge applies a merge step to the waiting message k (call under e.mu).
func (e *Engine) merge(w *writes, qi *queue, k *keyed, s *keyStep) {
	d := int64(s.size) - int64(k.m.size)
	qi.bytes += d
	*qi.pb += d
	k.m.size = s.size
	k.body, k.attrs = s.body, s.attrs
	w.putMsg(qi, k.m)
	w.put(bucketPayloads, key(qi.id, k.m.id), encodePayload(&payload{Body: s.body, Attributes: s.attrs}))
}

// DeleteMessage removes a visible or delayed message by id
// (docs/lifecycle.md#delete-a-waiting-message).
func (e *Engine) DeleteMessage(ctx context.Context, q engine.Queue, id ids.ID) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	now := e.nowMs()
	var w writes
	e.mu.Lock()
	qi := e.queues[q.ID]
	var m *msg
	if qi != nil {
		qi.advance(now)
		m = qi.msgs[id]
	}
	switch {
	case m == nil || m.expiresAt <= now:
		e.mu.Unlock()
		return engine.ErrNoMessage
	case m.st == stInFlight || m.st == stTaking:
		e.mu.Unlock()
		return engine.ErrMessageInFlight
	}
	qi.remove(m)
	w.delMsg(qi, m)
	w.wake(qi.id) // a fifo group's next message may be available now
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return err
	}
	e.wakeAll(&w)
	return nil
}
