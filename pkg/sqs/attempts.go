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
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// Attempts remembers the answers of fifo receives by ReceiveRequestAttemptId for a while, so
// that a retried receive (its answer was lost) gets the same messages and handles instead of
// finding their groups in flight until the visibility timeout ends. It is best effort: a store
// that fails or refuses makes the retry a new receive.
//
// The copies are payloads kept outside the engine (and outside maxStoredBytes), so they are
// bounded: a project may have at most MaxAttemptBytesPerProject remembered per window of
// attemptWindow (counted from its first remembered attempt); beyond it, Put stores nothing
// and answers false. The in-memory store also holds at most maxMemAttemptBytes and
// maxMemAttempts in all, evicting the oldest.
type Attempts interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Put remembers val under key for ttl, charged to project's budget; stored is false when
	// the budget refused it.
	Put(ctx context.Context, project ids.ID, key string, val []byte, ttl time.Duration) (stored bool, err error)
}

// MaxAttemptBytesPerProject bounds the bytes of a project's remembered receive attempts per
// window: 16 MiB, about six full batches of 256 KiB messages (one of ten 1 MiB messages) a minute.
const MaxAttemptBytesPerProject = 16 << 20

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

func (d *Door) remember(c *call, project ids.ID, key string, msgs []engine.Received) {
	b, err := json.Marshal(msgs)
	if err != nil {
		return
	}
	ctx, cancel := d.storageCtx(c)
	defer cancel()
	if _, err := d.cfg.Attempts.Put(ctx, project, key, b, attemptWindow); err != nil {
		d.cfg.Logger.Warn("sqs: storing a receive attempt", "err", err)
	}
}

// memAttempts keeps attempts in this process (one node: `queues serve`).
type memAttempts struct {
	clk clock.Clock
	mu  sync.Mutex
	m   map[string]memAttempt
	// order holds the keys in the order they were put: every entry lives for the same
	// window, so the front is the oldest and the first to expire.
	order []orderedKey
	bytes int64 // of the values in m
	seq   uint64
	spent map[ids.ID]window
}

type memAttempt struct {
	val     []byte
	expires time.Time
	seq     uint64
}

type orderedKey struct {
	key string
	seq uint64
}

// window is a project's spending in its current budget window.
type window struct {
	bytes int64
	ends  time.Time
}

// The in-memory store's bounds: entries and bytes in all.
const (
	maxMemAttempts     = 10_000
	maxMemAttemptBytes = 64 << 20
)

// NewMemAttempts keeps attempts in memory.
func NewMemAttempts(clk clock.Clock) Attempts {
	return &memAttempts{clk: clk, m: map[string]memAttempt{}, spent: map[ids.ID]window{}}
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

func (a *memAttempts) Put(_ context.Context, project ids.ID, key string, val []byte, ttl time.Duration) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clk.Now()
	if !a.charge(project, int64(len(val)), now, ttl) {
		return false, nil
	}
	a.drop(key)
	a.seq++
	a.m[key] = memAttempt{val: val, expires: now.Add(ttl), seq: a.seq}
	a.order = append(a.order, orderedKey{key, a.seq})
	a.bytes += int64(len(val))
	for len(a.order) > 0 {
		front := a.m[a.order[0].key]
		full := len(a.m) > maxMemAttempts || a.bytes > maxMemAttemptBytes
		if front.seq == a.order[0].seq && !full && now.Before(front.expires) {
			break
		}
		if front.seq == a.order[0].seq {
			a.drop(a.order[0].key)
		}
		a.order[0] = orderedKey{}
		a.order = a.order[1:]
	}
	return true, nil
}

// charge takes n bytes from the project's window, opening a new window when the last ended.
func (a *memAttempts) charge(project ids.ID, n int64, now time.Time, ttl time.Duration) bool {
	w, ok := a.spent[project]
	if !ok || !now.Before(w.ends) {
		if len(a.spent) >= maxMemAttempts {
			for p, o := range a.spent {
				if !now.Before(o.ends) {
					delete(a.spent, p)
				}
			}
		}
		w = window{ends: now.Add(ttl)}
	}
	if w.bytes+n > MaxAttemptBytesPerProject {
		a.spent[project] = w
		return false
	}
	w.bytes += n
	a.spent[project] = w
	return true
}

// drop forgets key's entry (its place in order is skipped when reached: the seq differs).
func (a *memAttempts) drop(key string) {
	if e, ok := a.m[key]; ok {
		a.bytes -= int64(len(e.val))
		delete(a.m, key)
	}
}

type redisAttempts struct{ rdb redis.UniversalClient }

// NewRedisAttempts keeps attempts in Redis, shared by every API replica; each project's
// budget is a counter there too, so it holds across replicas.
func NewRedisAttempts(rdb redis.UniversalClient) Attempts { return redisAttempts{rdb} }

func (r redisAttempts) Get(ctx context.Context, key string) ([]byte, bool, error) {
	b, err := r.rdb.Get(ctx, rediskeys.SQSAttempt(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// Put charges the project's window counter (which expires with the window that its first
// charge opened), then stores the value if the counter is within the budget. A refused put
// still counts: the window's spending only grows until it ends.
func (r redisAttempts) Put(ctx context.Context, project ids.ID, key string, val []byte, ttl time.Duration) (bool, error) {
	counter := rediskeys.SQSAttemptBytes(project)
	var used *redis.IntCmd
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		used = p.IncrBy(ctx, counter, int64(len(val)))
		p.ExpireNX(ctx, counter, ttl)
		return nil
	})
	if err != nil {
		return false, err
	}
	if used.Val() > MaxAttemptBytesPerProject {
		return false, nil
	}
	return true, r.rdb.Set(ctx, rediskeys.SQSAttempt(key), val, ttl).Err()
}
