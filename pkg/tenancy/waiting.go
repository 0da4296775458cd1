package tenancy

import (
	"context"
	_ "embed"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
)

// Parking bounds the long polls a project has parked at once (maxWaitingReceives). Park takes
// a slot for at most hold (after which the slot frees itself even if its holder died); ok is
// false when all max slots are taken. release frees the slot; it is safe to call once.
type Parking interface {
	Park(ctx context.Context, project ids.ID, max int64, hold time.Duration) (release func(), ok bool, err error)
}

//go:embed scripts/prelude.lua
var preludeLua string

//go:embed scripts/park.lua
var parkLua string

var parkScript = redis.NewScript(preludeLua + parkLua)

// RedisParking counts parked long polls per project in Redis, shared by every replica. Each
// slot is a zset member scored by its expiry, so a replica killed with slots taken leaks them
// only until they expire, never for good.
type RedisParking struct {
	rdb     redis.UniversalClient
	clk     clock.Clock
	replica string
	n       atomic.Uint64
}

// NewRedisParking returns the Redis parking of one replica (replica names its slots).
func NewRedisParking(rdb redis.UniversalClient, clk clock.Clock, replica string) *RedisParking {
	return &RedisParking{rdb: rdb, clk: clk, replica: replica}
}

// Park takes a slot in the project's zset.
func (p *RedisParking) Park(ctx context.Context, project ids.ID, max int64, hold time.Duration) (func(), bool, error) {
	if max <= 0 {
		return func() {}, false, nil
	}
	now := p.clk.Now().UnixMilli()
	member := p.replica + ":" + strconv.FormatUint(p.n.Add(1), 10)
	key := waitingKey(project)
	got, err := parkScript.Run(ctx, p.rdb, []string{key, waitingLeasesKey(project)}, now, now+hold.Milliseconds(), member, max).Int()
	if err != nil || got != 1 {
		return func() {}, false, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			// A failed removal leaves the slot to expire.
			_ = p.rdb.ZRem(ctx, key, member).Err()
		})
	}, true, nil
}

// LocalParking counts parked long polls per project within one process (serve).
type LocalParking struct {
	mu sync.Mutex
	n  map[ids.ID]int64
}

// NewLocalParking returns an empty in-process parking.
func NewLocalParking() *LocalParking { return &LocalParking{n: map[ids.ID]int64{}} }

// Park takes one of the project's slots.
func (p *LocalParking) Park(_ context.Context, project ids.ID, max int64, _ time.Duration) (func(), bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n[project] >= max {
		return func() {}, false, nil
	}
	p.n[project]++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.n[project]--; p.n[project] <= 0 {
				delete(p.n, project)
			}
		})
	}, true, nil
}

// Parked is how many slots of a project are taken in the process (tests).
func (p *LocalParking) Parked(project ids.ID) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[project]
}
