// Package stack wires the production API tier together: the Redis engine, the DynamoDB
// metadata store behind the metadata cache, the rate limiter, auth and receipt signing, the
// sweeper, and an HTTP server with graceful shutdown. The queues binary and the integration
// tests build replicas with it, so tests run exactly what production runs.
package stack

import (
	"context"
	"github.com/queueshq/queues/pkg/pushauth"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/console"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/fanout"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/meta/pushlog"
	"github.com/queueshq/queues/pkg/metacache"
	"github.com/queueshq/queues/pkg/movetask"
	"github.com/queueshq/queues/pkg/ratelimit"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/rediskeys"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/sqs"
	"github.com/queueshq/queues/pkg/sweeper"
	"github.com/queueshq/queues/pkg/tenancy"
	"github.com/queueshq/queues/pusher"
)

// Options configure one API replica.
type Options struct {
	Redis         redis.UniversalClient
	Dynamo        *dynamodb.Client
	Table         string
	Keys          *signingkeys.Ring
	OperatorToken string
	Rates         api.Rates // zero: api.DefaultRates
	Logger        *slog.Logger
	// SweepEvery is the sweeper's period (default sweeper.DefaultEvery; negative: no sweeper).
	SweepEvery time.Duration
	// CacheTTL bounds metadata staleness (default metacache.DefaultTTL).
	CacheTTL time.Duration
	// PartitionSendRate is passed to the engine (0: its default).
	PartitionSendRate int
	// PushAllowPrivate accepts plain http and private push endpoints (QUEUES_PUSH_ALLOW_PRIVATE).
	PushAllowPrivate bool
	// PublicURL is the service's URL as receivers reach it (QUEUES_PUBLIC_URL): the iss of
	// push tokens, whose keys are published at PublicURL/.well-known/jwks.json. Empty: no
	// push tokens (auth type "oidc" is refused).
	PublicURL string
	// Registry receives the API's metrics, which the caller serves on the admin listener
	// (pkg/adminhttp; nil: a registry of the replica's own, not served).
	Registry prometheus.Registerer
	// SyncReplicas is how many Redis replicas must hold a send before it is answered
	// (QUEUES_REDIS_SYNC_REPLICAS; 0: no wait). See redisengine/replicas.go.
	SyncReplicas int
	// Clock is the replica's clock (nil: the wall clock; tests inject a skewed one). The
	// engine refuses to serve while it is more than redisengine.DefaultMaxClockSkew off Redis's.
	Clock clock.Clock
	// RedisSendLimit is the Redis memory high-water mark above which sends answer 503
	// (QUEUES_REDIS_SEND_LIMIT; redisengine.ParseSendLimit; "" is 90 % of maxmemory).
	RedisSendLimit string
	// DefaultLimits are the project limits of projects without their own (zero:
	// tenancy.Defaults; QUEUES_DEFAULT_LIMITS).
	DefaultLimits tenancy.Limits
	// TrustedProxies are the proxies whose X-Forwarded-For names a request's source
	// (QUEUES_TRUSTED_PROXIES).
	TrustedProxies api.TrustedProxies
	// MeterEvery is how often the usage meter flushes (default tenancy.FlushEvery).
	MeterEvery time.Duration
	// MoveLease is how long a replica holds a move task between checkpoints; another replica
	// resumes the task once it lapses (default movetask.DefaultLease; QUEUES_MOVE_LEASE).
	MoveLease time.Duration
	// Streams cap the replica's receive streams and bound their idleness (zero fields: the
	// defaults; QUEUES_STREAM_MAX_PER_PROJECT, QUEUES_STREAM_MAX_PER_REPLICA).
	Streams api.StreamLimits
}

// Replica is one API tier process's worth of state.
type Replica struct {
	API    *api.Server
	Engine *redisengine.Engine
	Meta   *metacache.Cache
	Auth   *auth.Authority
	// Topics keeps topics and bindings (the DynamoDB store), for the API and the fan-out.
	Topics meta.TopicStore
	// Meter counts the replica's use per project and hour (flushed to DynamoDB).
	Meter *tenancy.Meter
	// Fanout copies topics' log entries into their bound queues.
	Fanout   *fanout.Runner
	draining chan struct{}
	drain    sync.Once
	parking  *tenancy.LeasedParking
	stop     context.CancelFunc
	done     chan struct{}
}

// New builds a replica. It refuses a Redis whose eviction policy would lose messages.
func New(ctx context.Context, o Options) (*Replica, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	var clk clock.Clock = clock.Real{}
	if o.Clock != nil {
		clk = o.Clock
	}
	eng, err := redisengine.New(o.Redis, clk, redisengine.Options{Logger: o.Logger, PartitionSendRate: o.PartitionSendRate,
		MaxClockSkew: redisengine.DefaultMaxClockSkew, SendLimit: o.RedisSendLimit,
		SyncReplicas: o.SyncReplicas})
	if err != nil {
		return nil, err
	}
	store := dynamometa.New(o.Dynamo, o.Table)
	cache := metacache.New(store, metacache.NewRedisBus(o.Redis, rediskeys.MetaChannel), clk, o.CacheTTL)
	authority := auth.New(o.Keys, o.OperatorToken, clk.Now)
	meter := tenancy.NewMeter(clk, "")
	stored := eng // the engine keeps each project's stored bytes
	mover := &movetask.Runner{Store: store, Queues: cache, Engine: eng, Clock: clk, Log: o.Logger.With("component", "movetask"), Lease: o.MoveLease}
	topics := cache.Topics(store) // a publish resolves its topic without reading DynamoDB
	fan := &fanout.Runner{Engine: eng, Topics: topics, Queues: cache, Bindings: store, Meter: meter, Clock: clk,
		Log: o.Logger.With("component", "fanout"), Registry: o.Registry}
	r := &Replica{Engine: eng, Meta: cache, Auth: authority, Meter: meter, Topics: store, Fanout: fan, draining: make(chan struct{}), done: make(chan struct{}),
		parking: tenancy.NewLeasedParking(o.Redis, clk, meter.Replica())}
	r.API = api.New(api.Config{
		Engine: eng, Meta: cache, Auth: authority, Receipts: receipt.NewSigner(o.Keys),
		Limiter: ratelimit.NewLeased(o.Redis), Rates: o.Rates, Clock: clk, Logger: o.Logger,
		Draining: r.draining, Registry: o.Registry,
		Subscriptions: store, Attempts: pushlog.NewAttempts(o.Redis), Health: pushlog.NewHealth(o.Redis),
		PushAllowPrivate: o.PushAllowPrivate, PushChanged: pusher.RedisNotifier(o.Redis),
		PushTokens:     pushauth.ForURL(store, clk, o.PublicURL),
		TrustedProxies: o.TrustedProxies,
		Tenancy:        store, DefaultLimits: o.DefaultLimits, Meter: meter, StoredBytes: stored,
		Parking:   r.parking,
		MoveTasks: store, MoveRunner: mover, Streams: o.Streams,
		Topics: topics, TopicEngine: fanout.Notifying(eng, fan), // a publish here wakes this replica's fan-out at once
		Dependencies: []api.Dependency{
			{Name: "redis", Check: func(ctx context.Context) error { return o.Redis.Ping(ctx).Err() }},
			{Name: "metadata", Check: store.Ping},
			{Name: "clock", Check: func(context.Context) error { return eng.ClockErr() }},
		},
	})
	mover.Budget = r.API // a task's batches spend its project's request and byte budgets
	fan.Limits = r.API   // copies are bounded by the project's maxStoredBytes, as sends are
	// Replayed copies are sends: bounded by maxStoredBytes, metered.
	mover.Replays = &movetask.ReplaySource{Engine: eng, Topics: topics, Limits: r.API, Meter: meter}
	console.Mount(r.API.Echo())
	sqs.New(sqs.Config{Backend: r.API.Service, Auth: authority, Clock: clk, Logger: o.Logger, Attempts: sqs.NewRedisAttempts(o.Redis), MoveTasks: r.API}).Mount(r.API.Echo())
	bg, stop := context.WithCancel(context.Background())
	r.stop = stop
	go func() {
		defer close(r.done)
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Add(4)
		go func() { defer wg.Done(); mover.Run(bg) }()
		go func() { defer wg.Done(); fan.Run(bg) }()
		go func() { defer wg.Done(); meter.Run(bg, store, o.MeterEvery, o.Logger) }()
		go func() { defer wg.Done(); tenancy.RunSampler(bg, clk, store, stored, o.Logger) }()
		if o.SweepEvery >= 0 {
			sweeper.Run(bg, store, eng, o.SweepEvery, o.Logger)
		}
	}()
	return r, nil
}

// Handler is the replica's HTTP handler.
func (r *Replica) Handler() http.Handler { return r.API.Handler() }

// Drain makes waiting receives answer now (the first step of a graceful shutdown).
func (r *Replica) Drain() { r.drain.Do(func() { close(r.draining) }) }

// Close stops background work and releases the engine's and cache's subscriptions.
func (r *Replica) Close() error {
	r.Drain()
	r.stop()
	<-r.done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	r.parking.Close(ctx) // its spare waiting-receive slots go back to the other replicas now
	cancel()
	r.Meta.Close()
	return r.Engine.Close()
}

// Serve serves the replica on ln until ctx ends, then shuts down gracefully (see api.Serve).
func Serve(ctx context.Context, ln net.Listener, r *Replica, grace time.Duration, log *slog.Logger) error {
	return api.Serve(ctx, ln, r, grace, log)
}
