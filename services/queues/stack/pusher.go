package stack

import (
	"context"
	"crypto/x509"
	"github.com/queueshq/queues/pkg/pushauth"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/meta/pushlog"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/tenancy"
	"github.com/queueshq/queues/pusher"
)

// PusherOptions configure one pusher fleet replica.
type PusherOptions struct {
	Redis        redis.UniversalClient
	Dynamo       *dynamodb.Client
	Table        string
	Keys         *signingkeys.Ring
	Logger       *slog.Logger
	AllowPrivate bool
	RootCAs      *x509.CertPool
	// PublicURL is the service's public URL, the iss of push tokens (QUEUES_PUBLIC_URL; empty:
	// no tokens, so pushes of "oidc" subscriptions fail naming why).
	PublicURL string
	Registry  prometheus.Registerer
	Member    string
	// LeaseTTL and Refresh are passed on (0: the pusher's defaults).
	LeaseTTL, Refresh time.Duration
	// MaxInFlight bounds the batches in flight across subscriptions (0: pusher.DefaultMaxInFlight).
	MaxInFlight int
	// Clock is the replica's clock (nil: the wall clock); see Options.Clock.
	Clock clock.Clock
	// MeterEvery is how often the push usage meter flushes (default tenancy.FlushEvery).
	MeterEvery time.Duration
}

// Pusher is a pusher replica with the engine it owns.
type Pusher struct {
	*pusher.Pusher
	Engine *redisengine.Engine
	// Meter counts the pushes per project and hour (flushed to DynamoDB while Run runs).
	Meter *tenancy.Meter
	store *dynamometa.Store
	every time.Duration
	log   *slog.Logger
}

// Run runs the pusher and its usage meter until ctx ends; the meter flushes once more after
// the pusher stopped.
func (p *Pusher) Run(ctx context.Context) error {
	mctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); p.Meter.Run(mctx, p.store, p.every, p.log) }()
	err := p.Pusher.Run(ctx)
	stop()
	<-done
	return err
}

// Close releases the engine (after Run has returned).
func (p *Pusher) Close() error { return p.Engine.Close() }

// NewPusher builds a pusher replica exactly as production runs it: the Redis engine, the
// DynamoDB store, leases and the attempts log in Redis, change announcements from the API.
func NewPusher(o PusherOptions) (*Pusher, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	var clk clock.Clock = clock.Real{}
	if o.Clock != nil {
		clk = o.Clock
	}
	eng, err := redisengine.New(o.Redis, clk, redisengine.Options{Logger: o.Logger, MaxClockSkew: redisengine.DefaultMaxClockSkew})
	if err != nil {
		return nil, err
	}
	store := dynamometa.New(o.Dynamo, o.Table)
	meter := tenancy.NewMeter(clk, "")
	p, err := pusher.New(pusher.Config{
		Usage:  meter,
		Engine: eng, Store: store, Receipts: receipt.NewSigner(o.Keys),
		Coordinator: pusher.NewRedisCoordinator(o.Redis, ""), Attempts: pushlog.NewAttempts(o.Redis),
		Health:  pushlog.NewHealth(o.Redis),
		Changes: pusher.RedisChanges(o.Redis), Generation: pusher.RedisGenerations(o.Redis),
		AllowPrivate: o.AllowPrivate, RootCAs: o.RootCAs,
		Clock: clk, Logger: o.Logger, Registry: o.Registry, Member: o.Member,
		LeaseTTL: o.LeaseTTL, Refresh: o.Refresh, MaxInFlight: o.MaxInFlight,
		Tokens: pushauth.ForURL(store, clk, o.PublicURL),
	})
	if err != nil {
		_ = eng.Close()
		return nil, err
	}
	return &Pusher{Pusher: p, Engine: eng, Meter: meter, store: store, every: o.MeterEvery, log: o.Logger}, nil
}
