package pusher

import (
	"context"
	"sync"

	"github.com/queueshq/queues/pkg/ids"
)

// DefaultMaxInFlight bounds the push batches one replica has in flight across all the
// subscriptions it holds (Config.MaxInFlight).
const DefaultMaxInFlight = 1000

// shares is a replica's bound on batches in flight across subscriptions, shared fairly so
// that no tenant's slow endpoints can take every slot (SPEC §10): the projects with
// subscriptions here split the bound evenly, and each project's share is split evenly
// between its subscriptions. A subscription takes a slot only while it is below its share
// and its project below the project's; the shares add up to no more than the bound, so a
// subscription below its share always finds a slot free, however long other subscriptions'
// pushes take. (A subscription's own flow control, maxInFlight, applies inside its share.)
type shares struct {
	mu       sync.Mutex
	max      int
	used     int
	subs     map[ids.ID]*subShare  // by queue id
	projects map[ids.ID]*projShare // by project id
	active   int                   // projects with a subscription joined
	changed  chan struct{}         // closed and replaced whenever a slot may have opened
}

type subShare struct {
	project ids.ID
	used    int
	joined  bool
}

type projShare struct {
	subs, used int
}

func newShares(max int) *shares {
	return &shares{max: max, subs: map[ids.ID]*subShare{}, projects: map[ids.ID]*projShare{}, changed: make(chan struct{})}
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
		sub = &subShare{project: project}
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

// limits returns the current share of queue's subscription and of its project.
func (s *shares) limits(sub *subShare) (subLimit, projLimit int) {
	projLimit = max(s.max/max(s.active, 1), 1)
	p := s.projects[sub.project]
	subLimit = max(projLimit/max(p.subs, 1), 1)
	return subLimit, projLimit
}

// acquire waits for a slot for queue's subscription (joined) within its share.
func (s *shares) acquire(ctx context.Context, queue ids.ID) error {
	for {
		s.mu.Lock()
		sub := s.subs[queue]
		if sub != nil && sub.joined {
			subLimit, projLimit := s.limits(sub)
			p := s.projects[sub.project]
			if s.used < s.max && p.used < projLimit && sub.used < subLimit {
				s.used++
				p.used++
				sub.used++
				s.mu.Unlock()
				return nil
			}
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// release frees a slot of queue's subscription.
func (s *shares) release(queue ids.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.subs[queue]
	if sub == nil || sub.used == 0 {
		return
	}
	sub.used--
	s.projects[sub.project].used--
	s.used--
	s.forget(queue, sub)
	s.wake()
}

// state returns the slots in use and the bound.
func (s *shares) state() (used, bound int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used, s.max
}
