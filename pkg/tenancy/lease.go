package tenancy

import (
	"context"
	_ "embed"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

//go:embed scripts/lease.lua
var leaseLua string

var leaseScript = redis.NewScript(preludeLua + leaseLua)

// DefaultIdleReturn is how long a replica keeps waiting-receive slots it leased but no longer
// uses before it gives them back.
const DefaultIdleReturn = time.Second

// leaseBlockMax is the most spare slots a replica leases beyond the ones in use; a project
// leases a 64th of its limit at a time, so replicas hold back little of anyone's limit.
const leaseBlockMax = 16

// leaseBlock is how many slots a lease takes beyond the one asked for (under 2: no lease).
func leaseBlock(max int64) int64 { return min(max/64, leaseBlockMax) }

// LeasedParking counts a replica's parked long polls per project in the process, and holds
// them in Redis as one lease per project that stands for as many slots as the replica uses,
// and a block more: parking and releasing cost a Redis call only when the lease grows, is
// renewed (once per hold), or gives back what stood unused for IdleReturn. Across replicas
// the project's limit holds exactly as with RedisParking: the leases and single slots in Redis
// never stand for more than the limit; a replica may be refused while another holds spare
// slots, for at most IdleReturn after they were last in use. Limits under 128 (a block of
// one) park poll by poll, exactly as RedisParking does.
type LeasedParking struct {
	exact  *RedisParking
	rdb    redis.UniversalClient
	clk    clock.Clock
	member string
	// IdleReturn is how long unused leased slots are kept (DefaultIdleReturn when 0).
	IdleReturn time.Duration

	mu     sync.Mutex
	leases map[ids.ID]*lease
}

// lease is one project's slots of this replica. mu serializes its Redis calls.
type lease struct {
	mu         sync.Mutex
	project    ids.ID
	max        int64 // the limit of the last lease
	used, held int64
	peak       int64 // the most used since the last trim (never below used)
	exp        int64 // ms: the lease's expiry in Redis
	timer      *time.Timer
	gone       bool // dropped from the map: Park takes a fresh one
}

// NewLeasedParking returns the leased parking of one replica (replica names its lease).
func NewLeasedParking(rdb redis.UniversalClient, clk clock.Clock, replica string) *LeasedParking {
	return &LeasedParking{exact: NewRedisParking(rdb, clk, replica), rdb: rdb, clk: clk,
		member: rediskeys.WaitingLease(replica), leases: map[ids.ID]*lease{}}
}

// Park takes a slot from the replica's lease, growing or renewing the lease in Redis when it
// has none free or would expire before the poll's hold ends.
func (p *LeasedParking) Park(ctx context.Context, project ids.ID, limit int64, hold time.Duration) (func(), bool, error) {
	if limit <= 0 {
		return func() {}, false, nil
	}
	block := leaseBlock(limit)
	if block < 2 {
		return p.exact.Park(ctx, project, limit, hold)
	}
	l := p.lockLease(project)
	defer l.mu.Unlock()
	now := p.clk.Now().UnixMilli()
	if l.used >= l.held || l.exp < now+hold.Milliseconds() || l.max != limit {
		exp := now + 2*hold.Milliseconds()
		got, err := p.setLease(ctx, project, now, exp, limit, l.used+block)
		if err != nil {
			return func() {}, false, err
		}
		l.held, l.exp, l.max = got, exp, limit
		if l.used >= l.held {
			return func() {}, false, nil
		}
	}
	l.used++
	l.peak = max(l.peak, l.used)
	return sync.OnceFunc(func() { p.release(l) }), true, nil
}

// lockLease returns the project's lease, locked.
func (p *LeasedParking) lockLease(project ids.ID) *lease {
	for {
		p.mu.Lock()
		l := p.leases[project]
		if l == nil {
			l = &lease{project: project}
			p.leases[project] = l
		}
		p.mu.Unlock()
		l.mu.Lock()
		if !l.gone {
			return l
		}
		l.mu.Unlock()
	}
}

// release frees a slot in the process; the lease keeps it until a trim finds it idle.
func (p *LeasedParking) release(l *lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.used--
	if l.held > l.used && l.timer == nil {
		l.timer = time.AfterFunc(p.idleReturn(), func() { p.trim(l) })
	}
}

func (p *LeasedParking) idleReturn() time.Duration {
	if p.IdleReturn > 0 {
		return p.IdleReturn
	}
	return DefaultIdleReturn
}

// trim gives back the slots the lease held beyond the most used since the last trim; a lease
// with nothing in use and nothing held leaves the map.
func (p *LeasedParking) trim(l *lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timer = nil
	keep := l.peak
	l.peak = l.used
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	p.shrink(ctx, l, keep)
	cancel()
	switch {
	case l.held > l.used:
		l.timer = time.AfterFunc(p.idleReturn(), func() { p.trim(l) })
	case l.used == 0 && l.held == 0:
		p.mu.Lock()
		if p.leases[l.project] == l {
			delete(p.leases, l.project)
		}
		p.mu.Unlock()
		l.gone = true
	}
}

// Close gives back the slots every lease holds beyond the polls still parked (all of them once
// the replica drained) and stops the idle trims: a replica shutting down does not leave its
// spare slots to expire (two holds) while other replicas are refused.
func (p *LeasedParking) Close(ctx context.Context) {
	p.mu.Lock()
	leases := slices.Collect(maps.Values(p.leases))
	p.mu.Unlock()
	for _, l := range leases {
		l.mu.Lock()
		if l.timer != nil {
			l.timer.Stop()
			l.timer = nil
		}
		p.shrink(ctx, l, l.used)
		l.mu.Unlock()
	}
}

// shrink gives back what l holds beyond keep slots (l locked); a failure leaves them to
// expire with the lease.
func (p *LeasedParking) shrink(ctx context.Context, l *lease, keep int64) {
	if keep >= l.held {
		return
	}
	if got, err := p.setLease(ctx, l.project, p.clk.Now().UnixMilli(), l.exp, l.max, keep); err == nil {
		l.held = got
	}
}

// setLease asks Redis for want slots in the lease (lease.lua) and returns how many it holds.
func (p *LeasedParking) setLease(ctx context.Context, project ids.ID, now, exp, limit, want int64) (int64, error) {
	keys := []string{waitingKey(project), waitingLeasesKey(project)}
	return leaseScript.Run(ctx, p.rdb, keys, now, exp, p.member, limit, want).Int64()
}
