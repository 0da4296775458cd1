package embeddedengine

import (
	"context"
	"slices"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Consumer backlogs (docs/delivery-options.md#consumers-backlogs-and-fairness). Each consumer's
// holdings are the deliveries it received (message id -> attempt), checked against the message
// index whenever they are counted: a holding counts while its message is still in flight at that
// attempt, before its deadline and its expiry. So acknowledgements, releases, dead-letters, expiry,
// purges and group purges all end a holding without being told, and the count is exact at every
// moment. A receive reserves its room under the engine's lock before it claims, so concurrent
// receives of one consumer stay within its bound between them.
//
// The holdings live in memory: a restarted process starts every consumer with empty holdings
// (messages held across the restart still come back at their deadlines).

// consumerRec is one consumer of one queue.
type consumerRec struct {
	id       string
	bound    int
	seen     int64 // engine-clock ms of its latest receive
	held     map[ids.ID]uint32
	reserved int // room taken by receives under way
	pruneAt  int // unbounded consumers: prune when held grows to this
}

// consumersOf is the consumer registry of a queue, by consumerId. Call under e.mu.
func (e *Engine) consumersOf(q ids.ID) map[string]*consumerRec {
	if e.cons == nil {
		e.cons = map[ids.ID]map[string]*consumerRec{}
	}
	set := e.cons[q]
	if set == nil {
		set = map[string]*consumerRec{}
		e.cons[q] = set
	}
	return set
}

// heldNow drops the consumer's holdings that ended and returns how many remain. Call under e.mu.
func (e *Engine) heldNow(q ids.ID, rec *consumerRec, now int64) int {
	qi := e.queues[q]
	for id, attempt := range rec.held {
		if qi == nil || !stillHeld(qi.msgs[id], attempt, now) {
			delete(rec.held, id)
		}
	}
	return len(rec.held)
}

// stillHeld reports whether m is still held by the delivery of the given attempt.
func stillHeld(m *msg, attempt uint32, now int64) bool {
	if m == nil || m.delivery() != attempt || m.expiresAt <= now {
		return false
	}
	return m.st == stTaking || (m.st == stInFlight && m.at > now)
}

// reserve registers the receive's consumer and takes the room left in its backlog.
func (e *Engine) reserve(q ids.ID, c engine.ConsumerOf, want int, now int64) (*consumerRec, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	set := e.consumersOf(q)
	rec := set[c.ID]
	if rec == nil {
		rec = &consumerRec{id: c.ID, held: map[ids.ID]uint32{}}
		set[c.ID] = rec
	}
	rec.bound, rec.seen = c.MaxBacklog, now
	room := want
	switch {
	case c.MaxBacklog > 0:
		room = c.Room(e.heldNow(q, rec, now)+rec.reserved, want)
	case len(rec.held) >= rec.pruneAt:
		rec.pruneAt = 2*e.heldNow(q, rec, now) + 64
	}
	rec.reserved += room
	return rec, room
}

// receiveAsConsumer is Receive for a named consumer: within its backlog's room.
func (e *Engine) receiveAsConsumer(ctx context.Context, q engine.Queue, req engine.ReceiveRequest) (engine.ReceiveResult, error) {
	c := *req.Consumer
	rec, room := e.reserve(q.ID, c, min(max(req.Max, 1), engine.MaxBatch), e.nowMs())
	if room == 0 {
		return engine.ReceiveResult{BacklogFull: true}, nil
	}
	inner := req
	inner.Consumer, inner.Max, inner.BindTo = nil, room, c.ID
	res, err := e.Receive(ctx, q, inner)
	tag := engine.TagOf(c.ID)
	e.mu.Lock()
	rec.reserved -= room
	for i := range res.Messages {
		m := &res.Messages[i]
		m.Consumer = tag
		rec.held[m.MessageID] = m.Attempt
	}
	e.mu.Unlock()
	return res, err
}

// Settled wakes the queue's receives, which may wait for room in a backlog; the holdings
// themselves follow the index (see above).
func (e *Engine) Settled(_ context.Context, q engine.Queue, cs []engine.HeldChange) error {
	if len(cs) > 0 {
		e.notify(q.ID)
	}
	return nil
}

// ListConsumers pages through the consumers seen within engine.ConsumerWindow, in consumerId
// order; consumers seen before it and holding nothing are forgotten.
func (e *Engine) ListConsumers(ctx context.Context, q engine.Queue, limit int, cursor string) (engine.ConsumerPage, error) {
	if err := ctxErr(ctx); err != nil {
		return engine.ConsumerPage{}, err
	}
	after, err := engine.ParseConsumerCursor(cursor)
	if err != nil {
		return engine.ConsumerPage{}, err
	}
	limit = min(max(limit, 1), engine.MaxConsumersPage)
	now := e.nowMs()
	since := now - engine.ConsumerWindow.Milliseconds()
	e.mu.Lock()
	defer e.mu.Unlock()
	set := e.cons[q.ID]
	names := make([]string, 0, len(set))
	for id, rec := range set {
		held := e.heldNow(q.ID, rec, now)
		switch {
		case rec.seen <= since && held == 0 && rec.reserved == 0:
			delete(set, id)
		case rec.seen > since && id > after:
			names = append(names, id)
		}
	}
	slices.Sort(names)
	var page engine.ConsumerPage
	for i, id := range names {
		if i == limit {
			page.NextCursor = engine.ConsumerCursor(names[i-1])
			break
		}
		rec := set[id]
		page.Consumers = append(page.Consumers, engine.ConsumerState{ID: id, InFlight: len(rec.held) + rec.reserved,
			MaxBacklog: rec.bound, LastSeen: time.UnixMilli(rec.seen).UTC()})
	}
	return page, nil
}
