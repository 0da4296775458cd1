// Package redisengine is the queue engine on Redis, single server or Redis Cluster.
//
// Each queue has 1 to 64 partitions; all keys of a partition share one hash tag (keys.go), so
// a partition is one Cluster slot and every operation is one Lua script per partition touched
// (scripts/*.lua). Messages are indexed by two sorted sets: never-received ones by the time
// they become visible, received ones by their visibility deadline; counts are ZCOUNTs.
// Time comes from the caller's clock and is passed to every script, so tests move a fake
// clock instead of sleeping.
//
// Dead-letter moves cross queues (and Cluster slots), so they take two steps that never lose
// a message: the source partition's script moves the message into the partition's outbox,
// then the engine inserts it into the dead-letter queue idempotently and clears the outbox
// entry. Sweep finishes moves interrupted by a crash.
//
// Fifo queues (message groups, strict per-group order, deduplication) are described in fifo.go.
package redisengine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queueshq/queues/pkg/engine/internal/watch"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// Defaults of Options.
const (
	DefaultPartitionSendRate = 20000
	// DefaultSingleNodePartitionSendRate replaces it on a single Redis server, where more
	// partitions spread nothing: one partition's scripts take about that much on one core.
	DefaultSingleNodePartitionSendRate = 100_000
	DefaultChannel                     = rediskeys.WakeChannel
	DefaultStartTimeout                = 10 * time.Second
)

const (
	// partitionCacheTTL bounds how long an Engine trusts its cached partition count. It is
	// measured on the process's monotonic clock: it is a cache lifetime, not a message deadline.
	partitionCacheTTL = time.Second
	// exactCountLimit is the range in which counts are promised exact.
	exactCountLimit = 100_000
	// oldestSample is how many of the earliest-expiring messages Stats looks at for the oldest.
	oldestSample = 5
	// expiredLookups bounds the expired, not yet swept messages Stats leaves out of a
	// partition's counts one by one; beyond it Stats sweeps the queue first.
	expiredLookups = 1000
	// sweepChunk is how many expired messages one Sweep script deletes; sweepChunks bounds the
	// chunks per partition per Sweep call.
	sweepChunk  = 500
	sweepChunks = 20
	// outboxPage is how many outbox entries one Sweep call looks at per partition.
	outboxPage = 100
	// outboxGrace is how old (engine clock) an outbox entry must be before Sweep finishes its
	// move: younger ones are most likely being finished by the operation that made them.
	outboxGrace = 10 * time.Second
	// defaultRetention applies when a Queue carries no retention (the API's default).
	defaultRetention = 345_600 * time.Second
)

// Options tune an Engine. The zero value is usable.
type Options struct {
	// PartitionSendRate is how many messages per second one partition takes before the queue
	// gets another partition. Partitions are there to spread a busy queue over Redis Cluster
	// nodes: on a cluster the default is 20,000; on a single server, where they spread
	// nothing and cost (concurrent calls to one partition share script calls, and a draining
	// queue's receives probe every partition), 100,000.
	PartitionSendRate int
	// Channel is the pub/sub channel carrying wake-ups (default "queues:wake"). Every replica
	// of a deployment must use the same one.
	Channel string
	// Logger receives failures of background work (default slog.Default()).
	Logger *slog.Logger
	// StartTimeout bounds New's checks of the server (default 10 s).
	StartTimeout time.Duration
	// MaxClockSkew, when positive, is how far the engine's clock may be off Redis's before
	// the engine refuses to serve (see clockcheck.go; production: DefaultMaxClockSkew). Zero:
	// no check (tests on a fake clock).
	MaxClockSkew time.Duration
	// ClockCheckEvery is how often the clock is checked (default DefaultClockCheckEvery).
	ClockCheckEvery time.Duration
	// SendLimit is the memory high-water mark above which sends answer 503 (ParseSendLimit:
	// "90%" of maxmemory, a byte count such as "800mb", or "off"; default DefaultSendLimit).
	SendLimit string
	// SyncReplicas, when positive, is how many replicas must hold a send before it is
	// answered (WAIT; see replicas.go), within SyncTimeout (default DefaultSyncTimeout).
	// Single primary only: New refuses it on a Cluster client.
	SyncReplicas int
	SyncTimeout  time.Duration
}

// Engine implements engine.Engine on Redis. It is safe for concurrent use.
type Engine struct {
	rdb redis.UniversalClient
	own bool // rdb was built by New (see noretry.go) and is closed by Close
	clk clock.Clock
	// cluster is true on Redis Cluster (or a Ring): scripts reach one slot only, so stored
	// bytes are folded into the project's total after each script (bytes.go).
	cluster bool
	opts    Options
	log     *slog.Logger

	head headroom // the store's memory, for refusing sends near maxmemory (headroom.go)

	ps       *redis.PubSub
	listened chan struct{}

	watch watch.Hub // waiting receives of this process

	// scanBytes counts the bytes of stored messages filtered receives read to match them
	// (filter.go), for tests that bound it.
	scanBytes atomic.Int64

	// Concurrent sends, first receive claims and single-partition acks on one partition
	// share script calls (combine.go).
	sends lanes[*sendJob]
	recvs lanes[*recvJob]
	acks  lanes[*ackJob]

	pmu   sync.Mutex
	parts map[ids.ID]partCount

	rot      uint32             // receive's rotating start partition; guarded by pmu
	grewAt   map[ids.ID]int64   // when this process last asked to grow each queue (ms); guarded by pmu
	empty    map[ids.ID][]int64 // per partition, until when receives try it last (ms); guarded by pmu
	gcCursor map[ids.ID]uint64  // Sweep's scan position in each fifo queue's group map; guarded by pmu
	touched  map[ids.ID]int64   // when this process last named each queue active (ms); guarded by pmu
	close    sync.Once

	clockErr  atomic.Pointer[error] // the clock check's verdict (nil: not checked)
	clockStop chan struct{}
	clockDone chan struct{}
}

var _ engine.Engine = (*Engine)(nil)

type partCount struct {
	n  int
	at time.Time
	// barrier is whether a barrier was pending when the count was read (field bon of the
	// same hash, read in the same command): receives that fall short then run the barrier
	// step (barrier.go). Other replicas' barrier sends set it at once by a wake-up.
	barrier bool
	// prio is whether the queue has had a message of priority above 0 (field pr of the same
	// hash, read in the same command): receives over several partitions then probe them all
	// for the highest band first (priority.go).
	prio bool
}

// New returns an engine on rdb (a *redis.Client, *redis.ClusterClient or *redis.Ring; the
// caller keeps ownership and closes it after the Engine; the engine talks through its own
// copy of a Client or ClusterClient, which never re-sends a script: see noretry.go). It refuses a server whose
// maxmemory-policy is not noeviction, and subscribes to the wake-up channel.
func New(rdb redis.UniversalClient, clk clock.Clock, opts Options) (*Engine, error) {
	if rdb == nil || clk == nil {
		return nil, errors.New("redisengine: a client and a clock are required")
	}
	if opts.PartitionSendRate <= 0 {
		opts.PartitionSendRate = DefaultSingleNodePartitionSendRate
		if _, cluster := rdb.(*redis.ClusterClient); cluster {
			opts.PartitionSendRate = DefaultPartitionSendRate
		}
	}
	if opts.Channel == "" {
		opts.Channel = DefaultChannel
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	limit, err := ParseSendLimit(opts.SendLimit)
	if err != nil {
		return nil, fmt.Errorf("redisengine: %w", err)
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if _, cluster := rdb.(*redis.ClusterClient); cluster && opts.SyncReplicas > 0 {
		return nil, errors.New("redisengine: SyncReplicas (QUEUES_REDIS_SYNC_REPLICAS) is not supported on Redis Cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	rdb, own := withoutRetries(rdb)
	traceScripts(rdb)
	fail := func(err error) (*Engine, error) {
		if own {
			_ = rdb.Close()
		}
		return nil, err
	}
	if err := checkEvictionPolicy(ctx, rdb); err != nil {
		return fail(err)
	}
	ps := rdb.Subscribe(ctx, opts.Channel)
	if _, err := ps.Receive(ctx); err != nil { // the subscription is confirmed before New returns
		_ = ps.Close()
		return fail(fmt.Errorf("redisengine: subscribing to %s: %w", opts.Channel, err))
	}
	_, single := rdb.(*redis.Client)
	e := &Engine{
		cluster:  !single,
		rdb:      rdb,
		own:      own,
		clk:      clk,
		opts:     opts,
		log:      opts.Logger,
		ps:       ps,
		listened: make(chan struct{}),
		parts:    map[ids.ID]partCount{},
		gcCursor: map[ids.ID]uint64{},
		touched:  map[ids.ID]int64{},
		grewAt:   map[ids.ID]int64{},
		empty:    map[ids.ID][]int64{},
	}
	e.head.limit, e.head.start = limit, time.Now()
	go e.listen(ps.Channel())
	if opts.MaxClockSkew > 0 {
		if opts.ClockCheckEvery <= 0 {
			opts.ClockCheckEvery = DefaultClockCheckEvery
		}
		e.opts = opts
		if err := e.checkClock(ctx); err != nil {
			_ = e.Close()
			return nil, fmt.Errorf("redisengine: reading the store's clock: %w", err)
		}
		e.clockStop, e.clockDone = make(chan struct{}), make(chan struct{})
		go e.watchClock()
	}
	return e, nil
}

// clockOK refuses an operation that reads or stamps a time while the clock is off.
func (e *Engine) clockOK() error { return e.ClockErr() }

// Close stops the wake-up subscription and closes the engine's own copy of the client (not
// the client given to New).
func (e *Engine) Close() error {
	var err error
	e.close.Do(func() {
		if e.clockStop != nil {
			close(e.clockStop)
			<-e.clockDone
		}
		err = e.ps.Close()
		<-e.listened
		if e.own {
			err = errors.Join(err, e.rdb.Close())
		}
	})
	return err
}

// checkEvictionPolicy refuses any maxmemory-policy but noeviction, on every master.
func checkEvictionPolicy(ctx context.Context, rdb redis.UniversalClient) error {
	check := func(ctx context.Context, c redis.Cmdable, addr string) error {
		policy, err := evictionPolicy(ctx, c)
		if err != nil {
			return fmt.Errorf("redisengine: reading maxmemory-policy of Redis at %s: %w", addr, err)
		}
		if policy != "noeviction" {
			return fmt.Errorf("redisengine: Redis at %s has maxmemory-policy %q; the queue engine requires "+
				"\"noeviction\", because an evicting policy silently deletes queued messages when memory runs out "+
				"(set maxmemory-policy noeviction)", addr, policy)
		}
		return nil
	}
	perClient := func(ctx context.Context, c *redis.Client) error { return check(ctx, c, c.Options().Addr) }
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, perClient)
	case *redis.Ring:
		return c.ForEachShard(ctx, perClient)
	case *redis.Client:
		return perClient(ctx, c)
	default:
		return check(ctx, rdb, "the configured address")
	}
}

// evictionPolicy reads maxmemory-policy by CONFIG GET, or from INFO memory where CONFIG is
// disabled (managed Redis).
func evictionPolicy(ctx context.Context, c redis.Cmdable) (string, error) {
	m, cfgErr := c.ConfigGet(ctx, "maxmemory-policy").Result()
	if p, ok := m["maxmemory-policy"]; cfgErr == nil && ok {
		return p, nil
	}
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return "", errors.Join(cfgErr, err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "maxmemory_policy:"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("neither CONFIG GET nor INFO memory tells the policy (CONFIG GET: %v)", cfgErr)
}

// nowMs is the engine clock in unix milliseconds.
func (e *Engine) nowMs() int64 { return e.clk.Now().UnixMilli() }

func fromMs(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// wrap translates a Redis failure into the API's vocabulary: the caller's cancellation passes
// through, connection failures, timeouts and transient server states become Unavailable, and
// anything else (a script or data error) Internal.
func (e *Engine) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var ae *apierr.Error
	if errors.As(err, &ae) || engine.IsRefusal(err) {
		return err
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && !transient(err) {
		e.log.Error("redisengine: "+op, "error", err)
		return engine.StoreFault(op, err)
	}
	return engine.StoreUnavailable(op, err)
}

// transient lists the Redis error replies that mean "not now" rather than "never".
func transient(err error) bool {
	for _, p := range []string{"OOM", "MISCONF", "BUSY", "LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN",
		"READONLY", "NOREPLICAS", "MOVED", "ASK", "NOSCRIPT"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// partitions returns the queue's partition count, cached for up to partitionCacheTTL.
func (e *Engine) partitions(ctx context.Context, q ids.ID) (int, error) {
	e.pmu.Lock()
	pc, ok := e.parts[q]
	e.pmu.Unlock()
	if ok && time.Since(pc.at) < partitionCacheTTL {
		return pc.n, nil
	}
	return e.partitionsFresh(ctx, q)
}

// partitionsFresh reads the partition count from Redis and refreshes the cache.
func (e *Engine) partitionsFresh(ctx context.Context, q ids.ID) (int, error) {
	n := 1
	vals, err := e.rdb.HMGet(ctx, partitionsKey(q), "n", "bon", "pr").Result()
	if err != nil {
		return 0, e.wrap(ctx, "partitions", err)
	}
	if s, ok := vals[0].(string); ok {
		if v, perr := strconv.Atoi(s); perr == nil && v >= 1 {
			n = min(v, engine.MaxPartitions)
		}
	}
	e.setPartitions(q, n, len(vals) > 1 && vals[1] != nil)
	e.markPriority(q, len(vals) > 2 && vals[2] != nil)
	return n, nil
}

func (e *Engine) setPartitions(q ids.ID, n int, barrier bool) {
	now := time.Now()
	e.pmu.Lock()
	defer e.pmu.Unlock()
	if len(e.parts) > 10_000 { // forget queues not used lately
		for id, pc := range e.parts {
			if now.Sub(pc.at) > partitionCacheTTL {
				delete(e.parts, id)
			}
		}
	}
	e.parts[q] = partCount{n: n, at: now, barrier: barrier, prio: e.parts[q].prio}
}

// emptyHint is how long (engine clock) a receive that found a partition short, or a probe
// that found it empty, makes later receives of this process start elsewhere. It only orders
// the partitions tried first: a receive that falls short still probes every partition.
const emptyHint = 100 * time.Millisecond

// firstPartition is where a receive on a queue of n partitions starts: the next one in
// rotation not recently seen empty (any, when all were).
func (e *Engine) firstPartition(q ids.ID, n int, now int64) int {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	hint := e.empty[q]
	for range n {
		p := int(e.rot % uint32(n))
		e.rot++
		if p >= len(hint) || hint[p] <= now {
			return p
		}
	}
	return int(e.rot % uint32(n))
}

// seenEmpty records that partition p of q had nothing visible (until: now + emptyHint), or,
// with until 0, that it may have again.
func (e *Engine) seenEmpty(q ids.ID, p int, until int64) {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	hint := e.empty[q]
	if until == 0 && p >= len(hint) {
		return
	}
	if p >= len(hint) {
		if len(e.empty) > 10_000 {
			clear(e.empty)
		}
		hint = append(hint, make([]int64, p+1-len(hint))...)
		e.empty[q] = hint
	}
	hint[p] = until
}

// grow adds a partition after a partition's send rate passed the threshold: at most one per
// second per queue (timed by the engine clock), up to engine.MaxPartitions.
func (e *Engine) grow(ctx context.Context, q ids.ID, seen int, now int64) {
	// Every send above the threshold would ask, and all but one ask a second are refused:
	// ask at most once a second from this process, so a fast queue's sends cost one round
	// trip, not two.
	e.pmu.Lock()
	if at, ok := e.grewAt[q]; ok && now-at < time.Second.Milliseconds() && now >= at {
		e.pmu.Unlock()
		return
	}
	if len(e.grewAt) > 10_000 {
		clear(e.grewAt)
	}
	e.grewAt[q] = now
	e.pmu.Unlock()
	n, err := growScript.Run(ctx, e.rdb, []string{partitionsKey(q)},
		seen, now, engine.MaxPartitions, time.Second.Milliseconds()).Int()
	if err != nil {
		e.log.Warn("redisengine: adding a partition", "queue", q.String(), "error", err)
		return
	}
	e.setPartitions(q, n, e.barrierPending(q))
}

// Watch registers a watcher of the queue's wake-ups (sends, releases, purge, delete), from
// any replica: they arrive over the engine's one pub/sub subscription.
func (e *Engine) Watch(q ids.ID) (<-chan struct{}, func()) { return e.watch.Watch(q) }

// WatchFilter is Watch for a receive with filter f: a send's wake-up signals it only when the
// send may hold a message f selects (its attribute digests travel in the wake-up).
func (e *Engine) WatchFilter(q ids.ID, f *filter.Filter) (<-chan struct{}, func()) {
	return e.watch.WatchFilter(q, f)
}

// listen delivers wake-ups until the subscription closes (go-redis reconnects it meanwhile).
func (e *Engine) listen(ch <-chan *redis.Message) {
	defer close(e.listened)
	for msg := range ch {
		pl, barrier := strings.CutPrefix(msg.Payload, barrierPrefix)
		q, digests, err := rediskeys.ParseWake(pl)
		if err != nil {
			continue
		}
		if barrier {
			e.markBarrier(q, true)
		}
		e.watch.NotifyDigests(q, digests)
	}
}

// publish wakes the queue's watchers on every replica.
func (e *Engine) publish(ctx context.Context, q ids.ID) {
	if err := e.rdb.Publish(ctx, e.opts.Channel, q.String()).Err(); err != nil {
		e.log.Warn("redisengine: publishing a wake-up", "queue", q.String(), "error", err)
	}
}

func retention(q engine.Queue) time.Duration {
	if q.Retention <= 0 {
		return defaultRetention
	}
	return q.Retention
}
