package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/apierr"
)

// Leased is the Redis limiter without a Redis round trip on most requests: a replica takes
// its budget from the shared GCRA budget in leases of 1/LeaseDivisor of a second's worth and
// spends them locally. Every token a replica spends was taken from the shared budget, so the
// per-queue limit holds across all replicas exactly as with Redis; what a lease costs is that
// its unspent tokens (fewer than a 50th of a second's worth per replica) are lost when it
// lapses after LeaseTTL. Limits under LeaseDivisor·2 a second take one token at a time, like
// Redis. When the shared budget cannot cover a whole lease, single tokens are asked for, so
// requests near the limit are admitted or refused (with the right Retry-After) one by one.
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
	rkey := "{q:" + key + "}"
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
	ls.tokens, ls.rate = 0, perSecond
	res, err := l.l.AllowN(ctx, rkey, limit, chunk)
	if fullStore(err) {
		return 0, nil
	}
	if err != nil {
		return 0, unavailable(ctx, err)
	}
	if res.Allowed >= chunk {
		ls.tokens, ls.until = chunk-1, now.Add(LeaseTTL)
		return 0, nil
	}
	return l.take(ctx, rkey, limit, 1)
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
// which a limiter that cannot write must not stop (SPEC §10's headroom).
func fullStore(err error) bool { return err != nil && redis.HasErrorPrefix(err, "OOM") }

func unavailable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return apierr.New(apierr.Unavailable, "rate limiter unavailable: %v", err)
}
