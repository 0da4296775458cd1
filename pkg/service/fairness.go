package service

import (
	"context"
	"sync"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// Fairness between waiting receives (docs/delivery-options.md#consumers-backlogs-and-fairness). On
// a queue whose fairness is roundRobin or proportional, the long polls parked at this replica do
// not race for a wake-up: the queue's arbiter watches it and hands the turn to one waiter at a
// time, in the queue's order, until a turn finds the queue empty:
//
//   - roundRobin: the consumer served longest ago first (never served: first), then the one
//     parked longest; a waiter whose backlog is full passes its turn on;
//   - proportional: the lowest share of its backlog in use (inFlight / maxBacklog; a consumer
//     without a bound has share 0) first, then as roundRobin.
//
// A waiter served leaves with its messages and the turn goes on, so a burst of n messages is
// shared by the n first waiters in order. A receive that finds messages at once takes them
// (it is not waiting): the order applies among waiting receives. Each replica orders its own
// waiters; consumers spread over replicas are ordered within each.

// Fairness settings.
const (
	FairnessFast         = "fast"
	FairnessRoundRobin   = "roundRobin"
	FairnessProportional = "proportional"
)

// FairnessOf is the queue's fairness as answered ("fast" when never set).
func FairnessOf(q meta.Queue) string {
	if q.Fairness == "" {
		return FairnessFast
	}
	return q.Fairness
}

// Waiting is how many receives wait on q at this replica in turns (tests wait for it).
func (s *Service) Waiting(q ids.ID) int { return s.arb.waiting(q) }

// turnOutcome is what a waiter's turn found.
type turnOutcome uint8

const (
	turnServed turnOutcome = iota // it took messages and leaves
	turnFull                      // its backlog had no room: the turn goes on
	turnEmpty                     // the queue had nothing: the round ends
)

// fairWaiter is one parked receive.
type fairWaiter struct {
	key    string // consumerId, or "" for a receive naming none
	bound  int
	joined uint64
	turn   chan struct{}
	result chan turnOutcome // buffered: a turn taken is always answered
	left   chan struct{}    // closed when the waiter leaves
	next   time.Time        // the NextVisibleAt its last empty turn saw
}

// arbiter orders the waiters of one queue.
type arbiter struct {
	s        *Service
	q        ids.ID
	fairness string
	mu       sync.Mutex
	waiters  map[*fairWaiter]struct{}
	joins    uint64
	kick     chan struct{}
	stop     func()
	wake     <-chan struct{}
}

// arbiters holds the queues' arbiters at this replica.
type arbiters struct {
	mu sync.Mutex
	m  map[ids.ID]*arbiter
	// served is each queue's turn counter and each consumer's last served turn (roundRobin's
	// memory outlives an arbiter that emptied).
	served map[ids.ID]map[string]uint64
}

// join parks a waiter on q's arbiter, starting it (watching the queue, one round at once so a
// send between the waiter's last look and the watch is not missed) when it is the first.
func (as *arbiters) join(s *Service, q meta.Queue, c *engine.ConsumerOf) (*arbiter, *fairWaiter) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.m == nil {
		as.m, as.served = map[ids.ID]*arbiter{}, map[ids.ID]map[string]uint64{}
	}
	a := as.m[q.ID]
	if a == nil {
		a = &arbiter{s: s, q: q.ID, waiters: map[*fairWaiter]struct{}{}, kick: make(chan struct{}, 1)}
		a.wake, a.stop = s.cfg.Engine.Watch(q.ID)
		as.m[q.ID] = a
		if as.served[q.ID] == nil {
			as.served[q.ID] = map[string]uint64{}
		}
		go a.run(as.served[q.ID])
		a.poke()
	}
	w := &fairWaiter{turn: make(chan struct{}), result: make(chan turnOutcome, 1), left: make(chan struct{})}
	if c != nil {
		w.key, w.bound = c.ID, c.MaxBacklog
	}
	a.mu.Lock()
	a.fairness = FairnessOf(q) // a changed setting applies from the next waiter on
	a.joins++
	w.joined = a.joins
	a.waiters[w] = struct{}{}
	a.mu.Unlock()
	return a, w
}

// leave removes w; the last waiter to leave stops the arbiter.
func (as *arbiters) leave(a *arbiter, w *fairWaiter) {
	close(w.left)
	as.mu.Lock()
	defer as.mu.Unlock()
	a.mu.Lock()
	delete(a.waiters, w)
	empty := len(a.waiters) == 0
	a.mu.Unlock()
	if empty && as.m[a.q] == a {
		delete(as.m, a.q)
		a.stop()
		close(a.kick)
	}
}

// waiting is how many receives wait on q at this replica (tests wait for it).
func (as *arbiters) waiting(q ids.ID) int {
	as.mu.Lock()
	defer as.mu.Unlock()
	a := as.m[q]
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.waiters)
}

func (a *arbiter) poke() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// run holds rounds on every wake-up of the queue, on pokes, and on the repoll and
// next-visible timers, until the arbiter stops.
func (a *arbiter) run(served map[string]uint64) {
	timer := time.NewTimer(repoll)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-a.kick:
			if !ok {
				return
			}
		case <-a.wake:
		case <-timer.C:
		}
		next := a.round(served)
		d := repoll
		if !next.IsZero() {
			d = min(d, max(time.Until(next), time.Millisecond))
		}
		timer.Reset(d)
	}
}

// round hands turns out in order until one finds the queue empty or every waiter had one;
// it answers the earliest NextVisibleAt an empty turn saw.
func (a *arbiter) round(served map[string]uint64) time.Time {
	tried := map[*fairWaiter]bool{}
	for {
		w := a.best(served, tried)
		if w == nil {
			return time.Time{}
		}
		tried[w] = true
		select {
		case w.turn <- struct{}{}:
		case <-w.left:
			continue
		}
		switch <-w.result {
		case turnServed:
			a.s.arb.mu.Lock()
			served[""]++ // the queue's turn counter
			if w.key != "" {
				served[w.key] = served[""]
			}
			a.s.arb.mu.Unlock()
		case turnEmpty:
			return w.next
		}
	}
}

// best is the untried waiter that goes next.
func (a *arbiter) best(served map[string]uint64, tried map[*fairWaiter]bool) *fairWaiter {
	a.mu.Lock()
	fairness := a.fairness
	a.mu.Unlock()
	var shares map[string]float64
	if fairness == FairnessProportional {
		shares = a.shares()
	}
	a.s.arb.mu.Lock()
	defer a.s.arb.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	var best *fairWaiter
	for w := range a.waiters {
		if tried[w] {
			continue
		}
		if best == nil || a.before(w, best, served, shares) {
			best = w
		}
	}
	return best
}

// before reports whether w goes before v.
func (a *arbiter) before(w, v *fairWaiter, served map[string]uint64, shares map[string]float64) bool {
	if shares != nil {
		if sw, sv := shares[w.key]*boundOf(w), shares[v.key]*boundOf(v); sw != sv {
			return sw < sv
		}
	}
	if lw, lv := servedAt(served, w), servedAt(served, v); lw != lv {
		return lw < lv
	}
	return w.joined < v.joined
}

// boundOf turns the shares' inFlight counts into shares: inFlight / maxBacklog (0 unbounded).
func boundOf(w *fairWaiter) float64 {
	if w.bound <= 0 {
		return 0
	}
	return 1 / float64(w.bound)
}

func servedAt(served map[string]uint64, w *fairWaiter) uint64 {
	if w.key == "" {
		return 0
	}
	return served[w.key]
}

// shares reads what each consumer of the queue holds now (inFlight by consumerId).
func (a *arbiter) shares() map[string]float64 {
	out := map[string]float64{}
	mq, err := a.s.cfg.Meta.GetQueueByID(context.Background(), a.q)
	if err != nil {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.s.cfg.StorageTimeout)
	defer cancel()
	eq, err := a.s.engineQueue(ctx, mq)
	if err != nil {
		return out
	}
	cursor := ""
	for {
		page, err := a.s.cfg.Engine.ListConsumers(ctx, eq, engine.MaxConsumersPage, cursor)
		if err != nil {
			a.s.cfg.Logger.Warn("reading consumers' holdings for fairness", "queue", a.q.String(), "err", err)
			return out
		}
		for _, c := range page.Consumers {
			out[c.ID] = float64(c.InFlight)
		}
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

// fairPoll is the waiting part of a long poll on a queue with fairness: it parks on the
// queue's arbiter and receives only on its turn.
func (s *Service) fairPoll(ctx context.Context, q meta.Queue, req engine.ReceiveRequest, deadline time.Time, wait time.Duration) ([]engine.Received, error) {
	release, ok := s.Park(ctx, q.ProjectID, wait)
	defer release()
	if !ok {
		return nil, nil
	}
	a, w := s.arb.join(s, q, req.Consumer)
	defer s.arb.leave(a, w)
	end := time.NewTimer(time.Until(deadline))
	defer end.Stop()
	tick := time.NewTicker(goneCheck)
	defer tick.Stop()
	for {
		select {
		case <-w.turn:
			msgs, err := s.fairTurn(ctx, q, req, w)
			if err != nil || len(msgs) > 0 {
				return msgs, err
			}
		case <-end.C:
			return nil, nil
		case <-tick.C:
			if s.cfg.Meta.Gone(q.ID) {
				return nil, apierr.New(apierr.NotFound, "the queue was deleted")
			}
		case <-s.cfg.Draining:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// fairTurn is one turn: a receive, its outcome told to the arbiter.
func (s *Service) fairTurn(ctx context.Context, q meta.Queue, req engine.ReceiveRequest, w *fairWaiter) ([]engine.Received, error) {
	outcome := turnEmpty
	defer func() { w.result <- outcome }()
	sctx, cancel := context.WithTimeout(ctx, s.cfg.StorageTimeout)
	defer cancel()
	eq, err := s.engineQueue(sctx, q)
	if err != nil {
		return nil, err
	}
	res, err := s.cfg.Engine.Receive(sctx, eq, req)
	switch {
	case err != nil:
		outcome = turnFull // this waiter's failure says nothing of the queue: pass the turn on
	case len(res.Messages) > 0:
		outcome = turnServed
	case res.BacklogFull:
		outcome = turnFull
	default:
		w.next = res.NextVisibleAt
	}
	return res.Messages, err
}
