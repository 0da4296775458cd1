package pusher

import (
	"context"
	"errors"
	"sync"

	"github.com/queueshq/queues/pkg/ids"
)

// DefaultMaxInFlight bounds the push batches one replica has in flight across all the
// subscriptions it holds (Config.MaxInFlight).
const DefaultMaxInFlight = 1000

// shares is a replica's bound on batches in flight across subscriptions, shared fairly so
// that no tenant's slow endpoints can take every slot (docs/security.md#what-one-tenant-can-cost):
// the projects with subscriptions here split the bound evenly, and each project's share is split
// evenly between its subscriptions. A subscription takes a slot only while it is below its share
// and its project below the project's; the shares add up to no more than the bound, so a
// subscription below its share always finds a slot free, however long other subscriptions'
// pushes take. (A subscription's own flow control, maxInFlight, applies inside its share.)
//
// Shares shrink when a subscription joins, but the slots already taken stay with their
// holders, and a holder stuck on an endpoint that does not answer keeps them for its whole
// push timeout: the subscription that joined would find the bound full. So a subscription
// below its share that finds no slot free preempts one: the oldest slot of a subscription
// above its share is cancelled, its push abandoned and its batch given back (redelivered, as
// after any failed push), and the freed slot goes to the waiter. One preemption is pending
// at a time, and none happens while a slot is free, so a bound that is not full costs
// nobody a push.
type shares struct {
	parent     context.Context // of every slot's context (the pusher's I/O context)
	mu         sync.Mutex
	max        int
	used       int
	seq        uint64                // slots taken so far: a slot's age
	preempting int                   // slots cancelled and not yet released
	subs       map[ids.ID]*subShare  // by queue id
	projects   map[ids.ID]*projShare // by project id
	active     int                   // projects with a subscription joined
	changed    chan struct{}         // closed and replaced whenever a slot may have opened
}

type subShare struct {
	project ids.ID
	used    int
	joined  bool
	slots   map[*slot]struct{}
}

// errPreempted is the cause of a slot's cancelled context when a subscription below its share
// took the slot (see shares).
var errPreempted = errors.New("push slot preempted by a subscription below its share")

// slot is one batch's place within the bound. Its context carries the batch's push, so
// preempting the slot abandons the push.
type slot struct {
	queue     ids.ID
	seq       uint64
	ctx       context.Context
	cancel    context.CancelCauseFunc
	preempted bool
}

// lost reports whether the slot was preempted: taken from its push.
func (sl *slot) lost() bool { return errors.Is(context.Cause(sl.ctx), errPreempted) }

type projShare struct {
	subs, used int
}

func newShares(parent context.Context, max int) *shares {
	return &shares{parent: parent, max: max, subs: map[ids.ID]*subShare{}, projects: map[ids.ID]*projShare{}, changed: make(chan struct{})}
}

func (s *shares) wake() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// join counts queue's subscription (of project) among the ones sharing the bound.
func (s *shares) join(queue, project ids.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.subs[queue]
	if sub == nil {
		sub = &subShare{project: project, slots: map[*slot]struct{}{}}
		s.subs[queue] = sub
	}
	if sub.joined {
		return
	}
	sub.joined = true
	p := s.projects[sub.project]
	if p == nil {
		p = &projShare{}
		s.projects[sub.project] = p
	}
	if p.subs == 0 {
		s.active++
	}
	p.subs++
	s.wake() // shares shrank: nothing opens, but waiters re-read their share
}

// leave withdraws queue's subscription; slots it still holds are released as usual.
func (s *shares) leave(queue ids.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.subs[queue]
	if sub == nil || !sub.joined {
		return
	}
	sub.joined = false
	p := s.projects[sub.project]
	if p.subs--; p.subs == 0 {
		s.active--
	}
	s.forget(queue, sub)
	s.wake() // the others' shares grew
}

// forget drops bookkeeping that no longer holds anything.
func (s *shares) forget(queue ids.ID, sub *subShare) {
	if sub.joined || sub.used > 0 {
		return
	}
	delete(s.subs, queue)
	if p := s.projects[sub.project]; p != nil && p.subs == 0 && p.used == 0 {
		delete(s.projects, sub.project)
	}
}

// limits returns the current share of queue's subscription and of its project; a
// subscription that left has none.
func (s *shares) limits(sub *subShare) (subLimit, projLimit int) {
	projLimit = max(s.max/max(s.active, 1), 1)
	if !sub.joined {
		return 0, projLimit
	}
	p := s.projects[sub.project]
	subLimit = max(projLimit/max(p.subs, 1), 1)
	return subLimit, projLimit
}

// claim waits for a slot for queue's subscription (joined) within its share, preempting
// one held above another subscription's share when the bound is full.
func (s *shares) claim(ctx context.Context, queue ids.ID) (*slot, error) {
	for {
		s.mu.Lock()
		sub := s.subs[queue]
		if sub != nil && sub.joined {
			subLimit, projLimit := s.limits(sub)
			p := s.projects[sub.project]
			if p.used < projLimit && sub.used < subLimit {
				if s.used < s.max {
					sl := s.take(queue, sub, p)
					s.mu.Unlock()
					return sl, nil
				}
				s.preempt()
			}
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

func (s *shares) take(queue ids.ID, sub *subShare, p *projShare) *slot {
	s.used++
	p.used++
	sub.used++
	s.seq++
	sl := &slot{queue: queue, seq: s.seq}
	sl.ctx, sl.cancel = context.WithCancelCause(s.parent)
	sub.slots[sl] = struct{}{}
	return sl
}

// preempt cancels the oldest slot held above its subscription's share, unless a preemption is
// already pending (its release wakes the waiters). With the bound full and the waiter below
// its shares, some subscription is above its own, since the shares add up to no more than
// the bound.
func (s *shares) preempt() {
	if s.preempting > 0 {
		return
	}
	var victim *slot
	for _, sub := range s.subs {
		if limit, _ := s.limits(sub); sub.used <= limit {
			continue
		}
		for sl := range sub.slots {
			if !sl.preempted && (victim == nil || sl.seq < victim.seq) {
				victim = sl
			}
		}
	}
	if victim != nil {
		victim.preempted = true
		s.preempting++
		victim.cancel(errPreempted)
	}
}

// release frees a slot.
func (s *shares) release(sl *slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl.cancel(context.Canceled)
	sub := s.subs[sl.queue]
	if sub == nil {
		return
	}
	if _, ok := sub.slots[sl]; !ok {
		return
	}
	delete(sub.slots, sl)
	if sl.preempted {
		s.preempting--
	}
	sub.used--
	s.projects[sub.project].used--
	s.used--
	s.forget(sl.queue, sub)
	s.wake()
}

// state returns the slots in use and the bound.
func (s *shares) state() (used, bound int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used, s.max
}
