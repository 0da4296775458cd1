// Package pusher is the push delivery fleet (docs/push.md): every replica runs a Pusher, which
// takes a fair share of the push subscriptions through leases (Coordinator), receives their
// messages through the queue engine like any pull consumer, POSTs them in signed batches to
// the subscriber's endpoint and settles each message from the response.
//
// Safety of a delivery does not rest on the leases: every receive makes a new delivery (a new
// receipt handle), and only the replica that received it pushes it, so two replicas never push
// the same delivery, whatever happens to the leases. A replica that stops without settling
// (killed) loses nothing: its messages stay in flight until their visibility deadline and are
// then received and pushed again. Before it sends, a pusher checks that the batch's deadline
// leaves the whole push timeout (and a margin); otherwise it gives the batch back, so a stalled
// pusher never pushes a message whose deadline has passed — which, on fifo queues, could let a
// group's later messages overtake it.
package pusher

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queueshq/queues/pkg/pushauth"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/receipt"
)

// Timing defaults of Config.
const (
	DefaultLeaseTTL   = 10 * time.Second
	DefaultRefresh    = 5 * time.Second
	DefaultIdlePoll   = time.Second
	DefaultSendMargin = time.Second
	DefaultGrace      = 30 * time.Second
	// DeadlineMargin is what a pushed message's deadline adds to the push timeout (docs/push.md).
	DeadlineMargin = 5 * time.Second
)

// Store is the metadata a pusher reads: subscriptions, and queues by id.
type Store interface {
	meta.SubscriptionStore
	GetQueueByID(ctx context.Context, queueID ids.ID) (meta.Queue, error)
}

// Config wires a Pusher.
type Config struct {
	Engine      engine.Engine
	Store       Store
	Receipts    *receipt.Signer
	Coordinator Coordinator
	Attempts    meta.AttemptLog
	// Health keeps each subscription's endpoint health (the API reads it).
	Health meta.HealthLog
	// Changes, when set, subscribes to announcements of changed subscriptions (queue ids), so
	// a pause or a new endpoint applies at once rather than at the next Refresh.
	Changes func(fn func(ids.ID)) (stop func())
	// Generation, when set, reads the counter the API bumps on every change of queue's
	// subscription before answering it (RedisGenerations, LocalGenerations.Get). Every push
	// first compares it with the generation its subscription copy reflects and re-reads the
	// subscription when it moved, so no push starts under a state older than an answered
	// change (docs/push.md), however late the announcement on Changes arrives.
	Generation func(ctx context.Context, queue ids.ID) (int64, error)
	// Client sends the pushes; nil builds NewHTTPClient(AllowPrivate, RootCAs).
	Client       *http.Client
	AllowPrivate bool
	RootCAs      *x509.CertPool
	// Clock is the engine's clock, and the one rule of time in the pusher: everything the
	// service decides — visibility deadlines, the time left before a push, retry delays,
	// which signing secrets are current, the attempt's "at" — is computed on it, so tests move
	// a fake clock instead of sleeping. Two readings are the wall clock on purpose: the
	// webhook-timestamp, because the receiver checks it against its own wall clock (a fake
	// one would make every signature stale), and the latency of a request, a duration
	// measured on the monotonic clock.
	Clock clock.Clock
	// Tokens signs the bearer JWTs of subscriptions with auth type "oidc" (pkg/pushauth, the
	// ring the api publishes at /.well-known/jwks.json); nil: such pushes fail, naming why.
	Tokens *pushauth.Ring
	// RandN returns a uniform value in [0, n] (backoff jitter); nil: math/rand/v2.
	RandN    func(n int64) int64
	Logger   *slog.Logger
	Registry prometheus.Registerer
	// Member names this replica among the fleet (default: random).
	Member string
	// LeaseTTL is how long a lease lives without renewal: a dead replica's subscriptions move
	// to others after it (default 10 s). Leases are renewed every LeaseTTL/3.
	LeaseTTL time.Duration
	// Refresh is how often the subscription list is read again (default 5 s).
	Refresh time.Duration
	// IdlePoll bounds the wait on an empty queue between receives (default 1 s); sends and
	// releases wake the pusher at once.
	IdlePoll time.Duration
	// SendMargin is the time a batch must have left beyond the push timeout to be sent
	// (default 1 s).
	SendMargin time.Duration
	// Grace bounds a graceful stop's wait for pushes in progress (default 30 s).
	Grace time.Duration
	// MaxInFlight bounds the batches this replica has in flight across all its
	// subscriptions, shared fairly between projects and then between a project's
	// subscriptions (default DefaultMaxInFlight; see shares).
	MaxInFlight int

	// ReceiveLoops is how many receive loops each subscription runs (default 1). One process
	// serving the API and the pusher (serve) runs several: a loop waits for the engine
	// between batches, and the engine is in the same process, so more loops keep more
	// batches collecting at once.
	ReceiveLoops int

	// OnRateLimited, when set, is called when a push waits for a rate's tokens: a key's
	// (flowControl.messagesPerSecond) or, with sub true, the subscription's
	// (maxMessagesPerSecond). Tests wait on it instead of sleeping.
	OnRateLimited func(queue ids.ID, key string, sub bool)

	// OnAttempt, when set, is called after each attempt is settled and logged; OnGiveBack after
	// a received batch was given back unsent. Tests wait on them instead of sleeping.
	OnAttempt  func(queue ids.ID, a meta.Attempt)
	OnGiveBack func(queue ids.ID, n int)

	// Usage, when set, meters each push attempt to the subscription's project (attempts,
	// messages delivered and their payload bytes).
	Usage UsageCounter
}

// Pusher is one replica of the push fleet.
type Pusher struct {
	cfg    Config
	log    *slog.Logger
	m      *metrics
	client *http.Client
	start  time.Time

	// ioCtx carries every push request and settlement; Kill cancels it.
	ioCtx  context.Context
	ioStop context.CancelFunc
	killed atomic.Bool

	mu      sync.Mutex
	workers map[ids.ID]*worker // by queue id
	kick    chan struct{}
	shares  *shares

	// OnApplied, when set before Run, is called after a worker applied a subscription version
	// (tests wait on it instead of sleeping).
	OnApplied func(meta.Subscription)
}

// New returns a Pusher; call Run.
func New(cfg Config) (*Pusher, error) {
	if cfg.Engine == nil || cfg.Store == nil || cfg.Receipts == nil || cfg.Coordinator == nil || cfg.Attempts == nil || cfg.Health == nil {
		return nil, errors.New("pusher: engine, store, receipts, coordinator, attempts and health are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.RandN == nil {
		cfg.RandN = func(n int64) int64 {
			if n <= 0 {
				return 0
			}
			return mrand.Int64N(n + 1)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Member == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.Member = "pusher-" + hex.EncodeToString(b[:])
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.IdlePoll <= 0 {
		cfg.IdlePoll = DefaultIdlePoll
	}
	if cfg.SendMargin <= 0 {
		cfg.SendMargin = DefaultSendMargin
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	p := &Pusher{cfg: cfg, log: cfg.Logger.With("member", cfg.Member), m: newMetrics(cfg.Registry),
		client: cfg.Client, start: time.Now(), workers: map[ids.ID]*worker{}, kick: make(chan struct{}, 1),
	}
	if p.client == nil {
		p.client = NewHTTPClient(ClientOptions{AllowPrivate: cfg.AllowPrivate, RootCAs: cfg.RootCAs})
	}
	p.ioCtx, p.ioStop = context.WithCancel(context.Background())
	p.shares = newShares(p.ioCtx, cfg.MaxInFlight)
	return p, nil
}

// Member is this replica's name in the fleet.
func (p *Pusher) Member() string { return p.cfg.Member }

// Held returns the queue ids of the subscriptions this replica pushes for now.
func (p *Pusher) Held() []ids.ID {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ids.ID, 0, len(p.workers))
	for id := range p.workers {
		out = append(out, id)
	}
	return out
}

// InFlightLimit returns the flow-control limit of the subscription of queue: how many batches
// it may have in flight now, and how many it has (ok is false when this replica does not hold
// the subscription).
func (p *Pusher) InFlightLimit(queue ids.ID) (limit, inFlight int, ok bool) {
	p.mu.Lock()
	w := p.workers[queue]
	p.mu.Unlock()
	if w == nil {
		return 0, 0, false
	}
	limit, inFlight = w.flow.state()
	return limit, inFlight, true
}

// InFlight returns the batches this replica has in flight across its subscriptions, and
// the bound (Config.MaxInFlight).
func (p *Pusher) InFlight() (inFlight, bound int) { return p.shares.state() }

// Kill stops the replica as a crash would: pushes in progress are abandoned unsettled, leases
// are not released and membership is not withdrawn. Run returns. (Tests use it to play a
// killed process.)
func (p *Pusher) Kill() {
	p.killed.Store(true)
	p.ioStop()
	p.mu.Lock()
	for _, w := range p.workers {
		w.cancel()
	}
	p.mu.Unlock()
	p.kickNow()
}

func (p *Pusher) kickNow() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Changed tells the pusher that the subscription of queue changed (or appeared).
func (p *Pusher) Changed(queue ids.ID) {
	p.mu.Lock()
	w := p.workers[queue]
	p.mu.Unlock()
	if w == nil {
		p.kickNow()
		return
	}
	go w.refresh(p.ioCtx)
}

// Run pushes until ctx ends, then stops gracefully: no new receives, pushes in progress
// finish and settle (up to Grace), leases are released.
func (p *Pusher) Run(ctx context.Context) error {
	if p.cfg.Changes != nil {
		stop := p.cfg.Changes(p.Changed)
		defer stop()
	}
	tick := time.NewTicker(p.cfg.LeaseTTL / 3)
	defer tick.Stop()
	var subs []meta.Subscription
	var listed time.Time
	fresh := false
	for {
		if p.killed.Load() {
			return nil
		}
		members, err := p.cfg.Coordinator.Heartbeat(ctx, p.cfg.Member, p.cfg.LeaseTTL)
		if err != nil && ctx.Err() == nil {
			p.log.Warn("push fleet heartbeat failed", "err", err)
			members = 1
		}
		if subs == nil || time.Since(listed) >= p.cfg.Refresh || len(p.kick) > 0 {
			select {
			case <-p.kick:
			default:
			}
			if s, err := p.listAll(ctx); err == nil {
				subs, listed, fresh = s, time.Now(), true
			} else if ctx.Err() == nil {
				p.log.Warn("listing subscriptions failed", "err", err)
			}
		}
		if ctx.Err() == nil && !p.killed.Load() {
			p.balance(ctx, subs, fresh, members)
		}
		fresh = false
		select {
		case <-ctx.Done():
			if !p.killed.Load() {
				p.stopAll()
			}
			return nil
		case <-tick.C:
		case <-p.kick:
			// Re-list at once on the next round.
			p.kickNow()
		}
	}
}

func (p *Pusher) listAll(ctx context.Context) ([]meta.Subscription, error) {
	var all []meta.Subscription
	cursor := ""
	for {
		page, next, err := p.cfg.Store.ListSubscriptions(ctx, meta.Page{Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// engineQueue reads a queue's settings with its dead-letter queue's.
func (p *Pusher) engineQueue(ctx context.Context, qid ids.ID) (queueInfo, error) {
	q, err := p.cfg.Store.GetQueueByID(ctx, qid)
	if err != nil {
		return queueInfo{}, err
	}
	eq, err := meta.EngineQueue(ctx, p.cfg.Store, q)
	if err != nil {
		return queueInfo{}, err
	}
	return queueInfo{name: q.Name, eq: eq}, nil
}

type queueInfo struct {
	name string
	eq   engine.Queue
}
