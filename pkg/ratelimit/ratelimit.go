// Package ratelimit enforces per-queue request rates. The Redis limiter shares one GCRA budget
// per key among every API replica (redis_rate runs it as one script); the local limiter is the
// same contract within one process, for the embedded mode.
package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// Redis is a limiter shared by all replicas through Redis.
type Redis struct{ l *redis_rate.Limiter }

// NewRedis returns a limiter on rdb. A budget named key is stored under "rate:" +
// rediskeys.Budget(key), in a slot of its own (the limiter's script touches that one key).
func NewRedis(rdb redis.UniversalClient) *Redis { return &Redis{l: redis_rate.NewLimiter(rdb)} }

// Allow takes one request from key's budget of perSecond requests a second (burst of one
// second's worth).
func (r *Redis) Allow(ctx context.Context, key string, perSecond int) (time.Duration, error) {
	res, err := r.l.Allow(ctx, rediskeys.Budget(key), redis_rate.PerSecond(perSecond))
	if fullStore(err) {
		return 0, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, apierr.New(apierr.Unavailable, "rate limiter unavailable: %v", err)
	}
	if res.Allowed > 0 {
		return 0, nil
	}
	return max(res.RetryAfter, time.Millisecond), nil
}

// Local is an in-process limiter.
type Local struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

// NewLocal returns an in-process limiter.
func NewLocal() *Local { return &Local{m: map[string]*rate.Limiter{}} }

// Allow takes one request from key's budget.
func (l *Local) Allow(_ context.Context, key string, perSecond int) (time.Duration, error) {
	l.mu.Lock()
	lim, ok := l.m[key]
	if !ok || int(lim.Limit()) != perSecond {
		lim = rate.NewLimiter(rate.Limit(perSecond), perSecond)
		l.m[key] = lim
	}
	l.mu.Unlock()
	r := lim.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return d, nil
	}
	return 0, nil
}

// AllowN takes n units from key's budget of perSecond units a second (a byte rate): what
// the project byte limits use. n above a second's budget is taken as a second's budget.
func (r *Redis) AllowN(ctx context.Context, key string, perSecond, n int) (time.Duration, error) {
	res, err := r.l.AllowN(ctx, rediskeys.Budget(key), redis_rate.PerSecond(perSecond), min(n, perSecond))
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

// AllowN takes n units from key's budget of perSecond units a second.
func (l *Local) AllowN(_ context.Context, key string, perSecond, n int) (time.Duration, error) {
	l.mu.Lock()
	lim, ok := l.m[key]
	if !ok || int(lim.Limit()) != perSecond {
		lim = rate.NewLimiter(rate.Limit(perSecond), perSecond)
		l.m[key] = lim
	}
	l.mu.Unlock()
	r := lim.ReserveN(time.Now(), min(n, perSecond))
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return d, nil
	}
	return 0, nil
}
