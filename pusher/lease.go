package pusher

import (
	"context"
	"embed"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// Coordinator shares subscriptions among pusher replicas: a replica pushes for a subscription
// only while it holds the subscription's lease, and each replica aims at its fair share of the
// subscriptions, given how many replicas are alive.
//
// A lease is a fencing token: each acquisition of a subscription's lease gets a larger token,
// and renewals and releases succeed only for the current holder's token, so a replica that was
// paused past its lease cannot extend or drop a lease that has moved on.
type Coordinator interface {
	// Heartbeat records that member is alive for ttl and returns how many members are alive.
	Heartbeat(ctx context.Context, member string, ttl time.Duration) (int, error)
	// Leave removes member at once (graceful stop).
	Leave(ctx context.Context, member string) error
	// Acquire takes sub's lease for ttl if nobody holds it; ok is false when someone does.
	Acquire(ctx context.Context, sub ids.ID, member string, ttl time.Duration) (token int64, ok bool, err error)
	// Renew extends a held lease; ok is false when the lease is no longer member's token.
	Renew(ctx context.Context, sub ids.ID, member string, token int64, ttl time.Duration) (ok bool, err error)
	// Release drops a held lease (no-op when it has moved on).
	Release(ctx context.Context, sub ids.ID, member string, token int64) error
}

// RedisCoordinator keeps leases and membership in Redis, timed by the Redis server's clock so
// replicas' clocks need not agree. Every key of one subscription shares a hash tag (Cluster).
type RedisCoordinator struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRedisCoordinator returns a coordinator on rdb; prefix namespaces the keys (default
// rediskeys.PushPrefix).
func NewRedisCoordinator(rdb redis.UniversalClient, prefix string) *RedisCoordinator {
	if prefix == "" {
		prefix = rediskeys.PushPrefix
	}
	return &RedisCoordinator{rdb: rdb, prefix: prefix}
}

func (c *RedisCoordinator) membersKey() string { return rediskeys.PushMembers(c.prefix) }
func (c *RedisCoordinator) leaseKeys(sub ids.ID) []string {
	return []string{rediskeys.PushLease(c.prefix, sub), rediskeys.PushFence(c.prefix, sub)}
}

// The coordinator's scripts, each with its contract header (KEYS, ARGV, Returns).
//
//go:embed scripts/*.lua
var scriptFiles embed.FS

func loadScript(name string) *redis.Script {
	src, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return redis.NewScript(string(src))
}

var (
	heartbeatScript = loadScript("heartbeat")
	acquireScript   = loadScript("acquire")
	renewScript     = loadScript("renew")
	releaseScript   = loadScript("release")
)

// Heartbeat records member as alive.
func (c *RedisCoordinator) Heartbeat(ctx context.Context, member string, ttl time.Duration) (int, error) {
	n, err := heartbeatScript.Run(ctx, c.rdb, []string{c.membersKey()}, member, ttl.Milliseconds()).Int()
	return max(n, 1), err
}

// Leave removes member.
func (c *RedisCoordinator) Leave(ctx context.Context, member string) error {
	return c.rdb.ZRem(ctx, c.membersKey(), member).Err()
}

// Acquire takes a free lease.
func (c *RedisCoordinator) Acquire(ctx context.Context, sub ids.ID, member string, ttl time.Duration) (int64, bool, error) {
	tok, err := acquireScript.Run(ctx, c.rdb, c.leaseKeys(sub), member, ttl.Milliseconds()).Int64()
	if err != nil {
		return 0, false, err
	}
	return tok, tok > 0, nil
}

func holder(member string, token int64) string { return member + "|" + strconv.FormatInt(token, 10) }

// Renew extends a held lease.
func (c *RedisCoordinator) Renew(ctx context.Context, sub ids.ID, member string, token int64, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, c.rdb, c.leaseKeys(sub)[:1], holder(member, token), ttl.Milliseconds()).Int()
	return n == 1, err
}

// Release drops a held lease.
func (c *RedisCoordinator) Release(ctx context.Context, sub ids.ID, member string, token int64) error {
	return releaseScript.Run(ctx, c.rdb, c.leaseKeys(sub)[:1], holder(member, token)).Err()
}

// Solo is the Coordinator of a single pusher process (embedded mode): one member, which gets
// every lease.
type Solo struct {
	mu     sync.Mutex
	tokens map[ids.ID]int64
	next   int64
}

// NewSolo returns a single-process coordinator.
func NewSolo() *Solo { return &Solo{tokens: map[ids.ID]int64{}} }

// Heartbeat reports one member.
func (s *Solo) Heartbeat(context.Context, string, time.Duration) (int, error) { return 1, nil }

// Leave does nothing.
func (s *Solo) Leave(context.Context, string) error { return nil }

// Acquire takes a free lease.
func (s *Solo) Acquire(_ context.Context, sub ids.ID, _ string, _ time.Duration) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.tokens[sub]; held {
		return 0, false, nil
	}
	s.next++
	s.tokens[sub] = s.next
	return s.next, true, nil
}

// Renew succeeds for the current token.
func (s *Solo) Renew(_ context.Context, sub ids.ID, _ string, token int64, _ time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens[sub] == token, nil
}

// Release drops the lease.
func (s *Solo) Release(_ context.Context, sub ids.ID, _ string, token int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens[sub] == token {
		delete(s.tokens, sub)
	}
	return nil
}

// ChangesChannel is the Redis pub/sub channel on which the API announces subscription changes
// (the payload is the queue id), so pushers apply a pause or a new endpoint at once.
const ChangesChannel = rediskeys.PushChanges

// The API bumps a per-queue generation counter (rediskeys.PushGeneration) on every
// subscription change, before it answers. A pusher reads it just before each push: a push never
// starts under a subscription state older than a change already answered, whatever the
// announcement's delay.

// RedisNotifier returns the API's side of change announcements: the queue's generation is
// bumped, then the change is announced (which wakes paused workers and starts new ones).
func RedisNotifier(rdb redis.UniversalClient) func(ctx context.Context, queue ids.ID) {
	return func(ctx context.Context, queue ids.ID) {
		_ = rdb.Incr(ctx, rediskeys.PushGeneration(queue)).Err()
		_ = rdb.Publish(ctx, ChangesChannel, queue.String()).Err()
	}
}

// RedisGenerations returns the pusher's reader of the generations RedisNotifier bumps.
func RedisGenerations(rdb redis.UniversalClient) func(ctx context.Context, queue ids.ID) (int64, error) {
	return func(ctx context.Context, queue ids.ID) (int64, error) {
		n, err := rdb.Get(ctx, rediskeys.PushGeneration(queue)).Int64()
		if errors.Is(err, redis.Nil) {
			return 0, nil
		}
		return n, err
	}
}

// LocalGenerations is the in-process form of the generation counters (one process serving
// both the API and the pusher).
type LocalGenerations struct {
	mu sync.Mutex
	m  map[ids.ID]int64
}

// Bump records a change of queue's subscription.
func (g *LocalGenerations) Bump(queue ids.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[ids.ID]int64{}
	}
	g.m[queue]++
}

// Get returns queue's generation.
func (g *LocalGenerations) Get(_ context.Context, queue ids.ID) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[queue], nil
}

// RedisChanges returns the pusher's side: fn is called with each announced queue id until
// stop is called.
func RedisChanges(rdb redis.UniversalClient) func(fn func(ids.ID)) (stop func()) {
	return func(fn func(ids.ID)) func() {
		ps := rdb.Subscribe(context.Background(), ChangesChannel)
		// Wait for the subscription's confirmation, so no announcement after this is missed.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = ps.Receive(ctx)
		cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for m := range ps.Channel() {
				if id, err := ids.ParseUUID(m.Payload); err == nil {
					fn(id)
				}
			}
		}()
		return func() { _ = ps.Close(); <-done }
	}
}
