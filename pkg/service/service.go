// Package service is the service layer: what the queues do, behind both doors to them. The
// /v1 HTTP API (pkg/api) and the SQS door (pkg/sqs) are adapters over it: they decode their
// protocol's requests, call the same operations here and write their protocol's answers from
// the errors returned (apierr values and the refusals' answers, refusals.go). It speaks no
// HTTP.
//
// It holds the operations both doors call (core.go: queues, sends, receives, settlements,
// tokens; queues.go), the queue rules both doors check (queuerules.go), the answers to the engines' and
// the metadata stores' refusals, the move-task request both doors start, the admission chain
// (admission.go, Admission), long polls (longpoll.go) and the arbiter that orders them
// (fairness.go). docs/architecture.md ("Packages") says what is here and
// what is still in pkg/api.
package service

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/tenancy"
)

// MaxRequestBytes bounds a request body (docs/api-tour.md: 3 MiB per request); a send's bytes are
// charged up to it.
const MaxRequestBytes = 3 << 20

// Metadata is the metadata the service reads and writes; Gone reports a queue deleted
// recently (so waiting receives answer 404 quickly).
type Metadata interface {
	meta.Store
	Gone(queueID ids.ID) bool
}

// Limiter decides per-queue rate limits shared by all replicas. It returns how long to wait
// when the call is over the limit, 0 when it may go ahead.
type Limiter interface {
	Allow(ctx context.Context, key string, perSecond int) (retryAfter time.Duration, err error)
}

// Rates are per-queue request rate limits (requests per second).
type Rates struct {
	StandardSend, StandardReceive int
	FIFOSend, FIFOReceive         int
}

// DefaultRates are the per-queue request rates' defaults (docs/configuration.md).
var DefaultRates = Rates{StandardSend: 3000, StandardReceive: 3000, FIFOSend: 300, FIFOReceive: 300}

// Config wires the service to its dependencies (pkg/api's Config carries the same fields to
// it; their documentation is there).
type Config struct {
	Engine         engine.Engine
	Meta           Metadata
	Limiter        Limiter // nil: no rate limits
	Rates          Rates   // zero: DefaultRates
	Clock          clock.Clock
	Logger         *slog.Logger
	StorageTimeout time.Duration
	Draining       <-chan struct{} // nil: never

	Receipts *receipt.Signer
	// Messages counts messages by operation (queues_messages_total; pkg/api registers it);
	// nil: counted nowhere.
	Messages *prometheus.CounterVec

	Subscriptions meta.SubscriptionStore
	PushChanged   func(ctx context.Context, queue ids.ID)
	Topics        meta.TopicStore
	TopicEngine   engine.Topics
	Tenancy       meta.TenancyStore
	DefaultLimits tenancy.Limits // zero: tenancy.Defaults
	Parking       tenancy.Parking
	Meter         *tenancy.Meter
}

// Service is the service layer of one replica.
type Service struct {
	cfg *Config
	// Admission is the admission chain every door's calls pass.
	*Admission
	arb arbiters // fairness between waiting receives (fairness.go)
}

// New returns the service, with Config's defaults filled in.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.StorageTimeout <= 0 {
		cfg.StorageTimeout = 10 * time.Second
	}
	if cfg.Rates == (Rates{}) {
		cfg.Rates = DefaultRates
	}
	if cfg.Messages == nil {
		cfg.Messages = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "queues_messages_total"}, []string{"op"})
	}
	if cfg.Draining == nil {
		cfg.Draining = make(chan struct{})
	}
	if cfg.DefaultLimits == (tenancy.Limits{}) {
		cfg.DefaultLimits = tenancy.Defaults
	}
	c := &cfg
	return &Service{cfg: c, Admission: &Admission{cfg: c}}
}
