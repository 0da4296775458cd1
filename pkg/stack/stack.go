// Package stack wires the production API tier together: the Redis engine, the DynamoDB
// metadata store behind the metadata cache, the rate limiter, auth and receipt signing, the
// sweeper, and an HTTP server with graceful shutdown. The queues binary and the integration
// tests build replicas with it, so tests run exactly what production runs.
package stack

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/keys"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/metacache"
	"github.com/queueshq/queues/pkg/ratelimit"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/sqs"
	"github.com/queueshq/queues/pkg/sweeper"
	"github.com/queueshq/queues/pusher"
)

// Options configure one API replica.
type Options struct {
	Redis         redis.UniversalClient
	Dynamo        *dynamodb.Client
	Table         string
	Keys          *keys.Ring
	OperatorToken string
	Rates         api.Rates
	Logger        *slog.Logger
	// SweepEvery is the sweeper's period (default 10 s; negative: no sweeper).
	SweepEvery time.Duration
	// CacheTTL bounds metadata staleness (default metacache.DefaultTTL).
	CacheTTL time.Duration
	// PartitionSendRate is passed to the engine (0: its default).
	PartitionSendRate int
	// PushAllowPrivate accepts plain http and private push endpoints (QUEUES_PUSH_ALLOW_PRIVATE).
	PushAllowPrivate bool
}

// Replica is one API tier process's worth of state.
type Replica struct {
	API      *api.Server
	Engine   *redisengine.Engine
	Meta     *metacache.Cache
	Auth     *auth.Authority
	draining chan struct{}
	drain    sync.Once
	stop     context.CancelFunc
	done     chan struct{}
}

// New builds a replica. It refuses a Redis whose eviction policy would lose messages.
func New(ctx context.Context, o Options) (*Replica, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Rates == (api.Rates{}) {
		o.Rates = api.DefaultRates
	}
	clk := clock.Real{}
	eng, err := redisengine.New(o.Redis, clk, redisengine.Options{Logger: o.Logger, PartitionSendRate: o.PartitionSendRate})
	if err != nil {
		return nil, err
	}
	store := dynamometa.New(o.Dynamo, o.Table)
	cache := metacache.New(store, metacache.NewRedisBus(o.Redis, "queues:meta"), clk, o.CacheTTL)
	authority := auth.New(o.Keys, o.OperatorToken, clk.Now)
	r := &Replica{Engine: eng, Meta: cache, Auth: authority, draining: make(chan struct{}), done: make(chan struct{})}
	r.API = api.New(api.Config{
		Engine: eng, Meta: cache, Auth: authority, Receipts: receipt.NewSigner(o.Keys),
		Limiter: ratelimit.NewLeased(o.Redis), Rates: o.Rates, Clock: clk, Logger: o.Logger,
		Draining:      r.draining,
		Subscriptions: store, Attempts: pusher.NewRedisAttempts(o.Redis),
		PushAllowPrivate: o.PushAllowPrivate, PushChanged: pusher.RedisNotifier(o.Redis),
		Ready: func(ctx context.Context) error {
			return errors.Join(o.Redis.Ping(ctx).Err(), store.Ping(ctx))
		},
	})
	sqs.New(sqs.Config{Backend: r.API, Auth: authority, Clock: clk, Logger: o.Logger, Attempts: sqs.NewRedisAttempts(o.Redis)}).Mount(r.API.Echo())
	bg, stop := context.WithCancel(context.Background())
	r.stop = stop
	go func() {
		defer close(r.done)
		if o.SweepEvery >= 0 {
			every := o.SweepEvery
			if every == 0 {
				every = 10 * time.Second
			}
			sweeper.Run(bg, store, eng, every, o.Logger)
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
	r.Meta.Close()
	return r.Engine.Close()
}

// Serve serves the replica on ln until ctx ends, then shuts down gracefully (see api.Serve).
func Serve(ctx context.Context, ln net.Listener, r *Replica, grace time.Duration, log *slog.Logger) error {
	return api.Serve(ctx, ln, r, grace, log)
}
