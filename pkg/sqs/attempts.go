package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// Attempts remembers the answers of fifo receives by ReceiveRequestAttemptId for a while, so
// that a retried receive (its answer was lost) gets the same messages and handles instead of
// finding their groups in flight until the visibility timeout ends. It is best effort: a store
// that fails makes the retry a new receive.
type Attempts interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
	Put(ctx context.Context, key string, val []byte, ttl time.Duration) error
}

// recalled answers the messages an earlier receive with this attempt key returned.
func (d *Door) recalled(c *call, key string) ([]engine.Received, bool) {
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	b, ok, err := d.cfg.Attempts.Get(ctx, key)
	if err != nil || !ok {
		if err != nil {
			d.cfg.Logger.Warn("sqs: reading a receive attempt", "err", err)
		}
		return nil, false
	}
	var msgs []engine.Received
	if json.Unmarshal(b, &msgs) != nil {
		return nil, false
	}
	return msgs, true
}

func (d *Door) remember(c *call, key string, msgs []engine.Received) {
	b, err := json.Marshal(msgs)
	if err != nil {
		return
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	if err := d.cfg.Attempts.Put(ctx, key, b, attemptWindow); err != nil {
		d.cfg.Logger.Warn("sqs: storing a receive attempt", "err", err)
	}
}

// memAttempts keeps attempts in this process (one node: `queues serve`).
type memAttempts struct {
	clk clock.Clock
	mu  sync.Mutex
	m   map[string]memAttempt
}

type memAttempt struct {
	val     []byte
	expires time.Time
}

const maxMemAttempts = 10_000

// NewMemAttempts keeps attempts in memory.
func NewMemAttempts(clk clock.Clock) Attempts {
	return &memAttempts{clk: clk, m: map[string]memAttempt{}}
}

func (a *memAttempts) Get(_ context.Context, key string) ([]byte, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.m[key]
	if !ok || !a.clk.Now().Before(e.expires) {
		return nil, false, nil
	}
	return e.val, true, nil
}

func (a *memAttempts) Put(_ context.Context, key string, val []byte, ttl time.Duration) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clk.Now()
	if len(a.m) >= maxMemAttempts {
		for k, e := range a.m {
			if !now.Before(e.expires) || len(a.m) >= maxMemAttempts {
				delete(a.m, k)
			}
		}
	}
	a.m[key] = memAttempt{val: val, expires: now.Add(ttl)}
	return nil
}

type redisAttempts struct{ rdb redis.UniversalClient }

// NewRedisAttempts keeps attempts in Redis, shared by every API replica.
func NewRedisAttempts(rdb redis.UniversalClient) Attempts { return redisAttempts{rdb} }

func (r redisAttempts) Get(ctx context.Context, key string) ([]byte, bool, error) {
	b, err := r.rdb.Get(ctx, rediskeys.SQSAttempt(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	return b, err == nil, err
}

func (r redisAttempts) Put(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	return r.rdb.Set(ctx, rediskeys.SQSAttempt(key), val, ttl).Err()
}
