package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// Leased is the Redis limiter without a Redis round trip on most requests: a replica takes
// its budget from the shared GCRA budget in leases of 1/LeaseDivisor of a second's worth and
// spends them locally. Every token a replica spends was taken from the shared budget, so the
// per-queue limit holds across all replicas exactly as with Redis; what a lease costs is that
// its unspent tokens (fewer than a 50th of a second's worth per replica) are lost when it
// lapses after LeaseTTL. Limits under LeaseDivisor·2 a second take one token at a time, like
// Redis. A lease takes what the shared budget holds, up to its size, in one round trip; once
// the budget is spent, calls are refused here until a whole lease has built up again (at
// most a 50th of a second past Redis's own Retry-After), so a tenant over its limit is
// admitted at exactly its rate, in leases, and costs two round trips a lease.
type Leased struct {
	l   *redis_rate.Limiter
	now func() time.Time

	mu     sync.Mutex
	leases map[string]*lease
}

// LeaseDivisor is how many leases make a second's budget; LeaseTTL how long a lease lasts.
const (
	LeaseDivisor = 50
	LeaseTTL     = time.Second
)

type lease struct {
	mu     sync.Mutex // held while a lease is taken from Redis: one round trip at a time per key
	rate   int
	tokens int
	until  time.Time
	// refusedUntil is when Redis said the budget admits refusedN more units at the earliest.
	// Nothing but admissions moves a GCRA budget, and they only make it later, so until then
	// a call for refusedN or more is refused here, without a round trip: a tenant calling
	// far over its limit costs a map lookup a call, not two Redis scripts
	// (docs/measurements/tenancy-neighbours.md).
	refusedUntil time.Time
	refusedN     int
}

// refused answers from a remembered refusal of Redis's: the wait left, or 0 to ask Redis.
func (ls *lease) refused(now time.Time, perSecond, n int) time.Duration {
	if ls.rate == perSecond && n >= ls.refusedN && now.Before(ls.refusedUntil) {
		return ls.refusedUntil.Sub(now)
	}
	return 0
}

// remember keeps Redis's refusal of n units (wait > 0) for calls until it ends.
func (ls *lease) remember(now time.Time, n int, wait time.Duration) {
	if wait > 0 {
		ls.refusedUntil, ls.refusedN = now.Add(wait), n
	}
}

// NewLeased returns a leasing limiter on rdb; it shares its budget (and its keys) with
// NewRedis's, so replicas of either kind keep one limit.
func NewLeased(rdb redis.UniversalClient) *Leased {
	return &Leased{l: redis_rate.NewLimiter(rdb), now: time.Now, leases: map[string]*lease{}}
}

func (l *Leased) get(key string) *lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := l.leases[key]
	if ls == nil {
		if len(l.leases) >= 10_000 {
			now := l.now()
			for k, o := range l.leases {
				if o.mu.TryLock() {
					if !now.Before(o.until) {
						delete(l.leases, k)
					}
					o.mu.Unlock()
				}
			}
		}
		ls = &lease{}
		l.leases[key] = ls
	}
	return ls
}

// Allow takes one request from key's budget of perSecond requests a second.
func (l *Leased) Allow(ctx context.Context, key string, perSecond int) (time.Duration, error) {
	chunk := perSecond / LeaseDivisor
	limit := redis_rate.PerSecond(perSecond)
	rkey := rediskeys.Budget(key)
	if chunk <= 1 {
		return l.take(ctx, rkey, limit, 1)
	}
	ls := l.get(key)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := l.now()
	if ls.rate == perSecond && ls.tokens > 0 && now.Before(ls.until) {
		ls.tokens--
		return 0, nil
	}
	if wait := ls.refused(now, perSecond, 1); wait > 0 {
		return wait, nil
	}
	ls.tokens, ls.rate, ls.refusedUntil = 0, perSecond, time.Time{}
	// One round trip takes whatever the shared budget holds, up to a lease.
	res, err := l.l.AllowAtMost(ctx, rkey, limit, chunk)
	if fullStore(err) {
		return 0, nil
	}
	if err != nil {
		return 0, unavailable(ctx, err)
	}
	if res.Allowed > 0 {
		ls.tokens, ls.until = res.Allowed-1, now.Add(LeaseTTL)
		return 0, nil
	}
	// The budget is spent: refuse here until a whole lease has built up again, so that a
	// tenant calling over its limit costs two round trips a lease, not two a token. It is
	// still admitted at its full rate, a lease (a 50th of a second's worth) at a time.
	wait := max(res.RetryAfter, time.Millisecond) + time.Duration(chunk-1)*time.Second/time.Duration(perSecond)
	ls.remember(now, 1, wait)
	return wait, nil
}

func (l *Leased) take(ctx context.Context, rkey string, limit redis_rate.Limit, n int) (time.Duration, error) {
	res, err := l.l.AllowN(ctx, rkey, limit, n)
	if fullStore(err) {
		return 0, nil
	}
	if err != nil {
		return 0, unavailable(ctx, err)
	}
	if res.Allowed > 0 {
		return 0, nil
	}
	return max(res.RetryAfter, time.Millisecond), nil
}

// fullStore reports a limiter write refused because Redis is at its maxmemory. The request is
// then let through unlimited: at full memory the engine refuses every send (its high-water
// mark is below maxmemory), so what remains is receives and settlements draining the store,
// which a limiter that cannot write must not stop
// (docs/stored-bytes.md#headroom-of-the-shared-store-queues_redis_send_limit).
func fullStore(err error) bool { return err != nil && redis.HasErrorPrefix(err, "OOM") }

func unavailable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return apierr.New(apierr.Unavailable, "rate limiter unavailable: %v", err)
}

// AllowN takes n units from key's shared budget of perSecond units a second (a byte rate).
// Leases are a 50th of a second's budget or n, whichever is more, so a replica spends
// locally what it took from Redis as Allow does.
func (l *Leased) AllowN(ctx context.Context, key string, perSecond, n int) (time.Duration, error) {
	n = min(n, perSecond)
	limit := redis_rate.PerSecond(perSecond)
	rkey := rediskeys.Budget(key)
	ls := l.get(key)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := l.now()
	if ls.rate == perSecond && ls.tokens >= n && now.Before(ls.until) {
		ls.tokens -= n
		return 0, nil
	}
	if wait := ls.refused(now, perSecond, n); wait > 0 {
		return wait, nil
	}
	ls.tokens, ls.rate, ls.refusedUntil = 0, perSecond, time.Time{}
	chunk := max(perSecond/LeaseDivisor, n)
	res, err := l.l.AllowN(ctx, rkey, limit, chunk)
	if fullStore(err) {
		return 0, nil
	}
	if err != nil {
		return 0, unavailable(ctx, err)
	}
	if res.Allowed >= chunk {
		ls.tokens, ls.until = chunk-n, now.Add(LeaseTTL)
		return 0, nil
	}
	wait, err := l.take(ctx, rkey, limit, n)
	ls.remember(now, n, wait)
	return wait, err
}
