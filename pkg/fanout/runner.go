// Package fanout moves topics' log entries into their bound queues (docs/topics.md), exactly once
// per binding. Every `queues api` replica and `serve` run one Runner. A runner holds a topic
// by its engine lease (engine.Topics.LeaseTopic) and, while it holds it, reads the log after
// the smallest binding cursor, reads the bindings again (their filters judge what was read),
// copies each binding's selected entries into its queue with engine.Topics.Copy and records
// the progress with AdvanceBindings. Copy is idempotent per binding (the queue keeps the
// binding's high-water mark), so a batch copied again after a crash or a takeover is stored
// once. docs/topics.md "Design" tells the whole story.
package fanout

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// Defaults of a Runner.
const (
	DefaultPoll      = time.Second
	DefaultLease     = 10 * time.Second
	DefaultIdleAfter = 5 * time.Second
	DefaultTrimEvery = time.Minute
	// DefaultMaxHeld bounds the topics one replica holds at once, so that a busy deployment's
	// topics spread over its replicas.
	DefaultMaxHeld = 1000
	// DefaultReadLimit is how many log entries one round reads: two batches' worth, so a
	// binding that selects everything is not re-read ten times per entry.
	DefaultReadLimit = 2 * MaxBatch
	// MaxBatch and MaxBatchBytes bound the one batch a binding copies per round.
	MaxBatch      = 100
	MaxBatchBytes = 4 << 20
	// orphanGrace is how long a binding the engine lists must be missing from the metadata
	// store before it is unbound: the API binds in the engine before it stores the binding,
	// so a younger absence is a create in progress.
	orphanGrace = time.Minute
	// orphanEvery is how often a held topic's bindings are compared with the metadata store.
	orphanEvery = 30 * time.Second
	maxBackoff  = 5 * time.Second
)

// TopicByID finds a topic by id alone (the metadata cache, or a meta.TopicStore).
type TopicByID interface {
	GetTopicByID(ctx context.Context, topicID ids.ID) (meta.Topic, error)
}

// BindingStore lists a topic's bindings as the metadata store keeps them (a meta.TopicStore):
// the runner unbinds in the engine what the store no longer has.
type BindingStore interface {
	TopicBindings(ctx context.Context, topicID ids.ID) ([]meta.Binding, error)
}

// Limits reads a project's maxStoredBytes (0: no limit), which bounds copies into its queues
// as it bounds sends.
type Limits interface {
	MaxStoredBytes(ctx context.Context, project ids.ID) (int64, error)
}

// Meter counts a project's use (a *tenancy.Meter): each copy is one messagesSent and its
// bytes bytesIn, as a send's.
type Meter interface {
	Add(project ids.ID, c meta.Counters)
}

// Runner fans out the topics of the deployment. The zero values of the optional fields are
// the defaults.
type Runner struct {
	Engine   engine.Topics
	Topics   TopicByID
	Queues   meta.QueueByID
	Bindings BindingStore
	Limits   Limits // nil: no byte limit on copies
	Meter    Meter  // nil: nothing metered
	Clock    clock.Clock
	Log      *slog.Logger
	// Owner names this replica in leases (unique per process).
	Owner string
	// Registry receives the runner's metrics (nil: not registered).
	Registry prometheus.Registerer

	Poll      time.Duration // how often ActiveTopics is read
	Lease     time.Duration // the topic lease's ttl, renewed every third of it
	IdleAfter time.Duration // how long a caught-up topic is held before it is idled
	TrimEvery time.Duration // how often a held topic is trimmed
	MaxHeld   int
	ReadLimit int

	// AfterCopy, when set, runs after a round's copies and before its AdvanceBindings (tests
	// end the runner there to open the crash window).
	AfterCopy func(topic ids.ID)

	once    sync.Once
	metrics *metrics
	mu      sync.Mutex
	held    map[ids.ID]bool
	kicked  map[ids.ID]bool
	kick    chan struct{}
	// trims is when this replica last trimmed each topic, and with which retention (old
	// entries swept when the map has doubled since trimsSwept).
	trims      map[ids.ID]trimmed
	trimsSwept int
	// busy is until when a topic whose lease another replica held is not tried again: every
	// replica reads the whole work list every Poll, and would otherwise ask for every lease
	// held elsewhere each time.
	busy map[ids.ID]time.Time
	// lags are, per held topic, when its oldest entry not handled by every binding was
	// published (absent: caught up).
	lags map[ids.ID]time.Time
	// dropped are the held topics Published was told of since their holder's last idle check.
	dropped map[ids.ID]bool
	// missing is when each binding the engine lists was first seen absent from the metadata
	// store (an entry goes when the binding is seen again or unbound).
	missing map[ids.ID]time.Time
}

// trimmed is a trim of a topic by this replica.
type trimmed struct {
	at        time.Time
	retention time.Duration
}

func (r *Runner) init() {
	r.once.Do(func() {
		r.held, r.kicked, r.dropped = map[ids.ID]bool{}, map[ids.ID]bool{}, map[ids.ID]bool{}
		r.busy, r.missing = map[ids.ID]time.Time{}, map[ids.ID]time.Time{}
		r.kick = make(chan struct{}, 1)
		r.lags = map[ids.ID]time.Time{}
		r.metrics = newMetrics(r.Registry, r.Lag)
		if r.Clock == nil {
			r.Clock = clock.Real{}
		}
		if r.Log == nil {
			r.Log = slog.Default()
		}
		if r.Owner == "" {
			r.Owner = ids.New().String()
		}
		r.Poll = orDefault(r.Poll, DefaultPoll)
		r.Lease = orDefault(r.Lease, DefaultLease)
		r.IdleAfter = orDefault(r.IdleAfter, DefaultIdleAfter)
		r.TrimEvery = orDefault(r.TrimEvery, DefaultTrimEvery)
		if r.MaxHeld <= 0 {
			r.MaxHeld = DefaultMaxHeld
		}
		if r.ReadLimit <= 0 {
			r.ReadLimit = DefaultReadLimit
		}
	})
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Published tells the runner that topic was just published to on this replica. An idle
// topic has no holder watching it; without this the first publish after a quiet spell would
// wait for the next poll of ActiveTopics (a second) instead of being fanned out at once.
func (r *Runner) Published(topic ids.ID) {
	r.init()
	r.mu.Lock()
	if r.held[topic] {
		r.dropped[topic] = true // the holder may be letting it go: see try
		r.mu.Unlock()
		return
	}
	r.kicked[topic] = true
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run fans out until ctx ends; the topics it holds are released as it stops, so another
// replica takes them over at once.
func (r *Runner) Run(ctx context.Context) {
	r.init()
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(r.Poll)
	defer t.Stop()
	r.scan(ctx, &wg)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.scan(ctx, &wg)
		case <-r.kick:
			r.takeKicked(ctx, &wg)
		}
	}
}

// scan tries to hold every active topic not held here.
func (r *Runner) scan(ctx context.Context, wg *sync.WaitGroup) {
	topics, err := r.Engine.ActiveTopics(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.metrics.errors.WithLabelValues("active").Inc()
			r.Log.Warn("fanout: reading the active topics failed", "error", err)
		}
		return
	}
	r.takeKicked(ctx, wg)
	now := r.Clock.Now()
	r.mu.Lock()
	for id, until := range r.busy {
		if !now.Before(until) {
			delete(r.busy, id)
		}
	}
	r.mu.Unlock()
	for _, id := range topics {
		r.try(ctx, wg, id)
	}
}

func (r *Runner) takeKicked(ctx context.Context, wg *sync.WaitGroup) {
	r.mu.Lock()
	kicked := make([]ids.ID, 0, len(r.kicked))
	for id := range r.kicked {
		kicked = append(kicked, id)
	}
	clear(r.kicked)
	r.mu.Unlock()
	for _, id := range kicked {
		r.try(ctx, wg, id)
	}
}

// try takes topic's lease unless this replica holds it already or holds its maximum, or
// another replica held it moments ago, and fans the topic out in a goroutine of its own while
// it holds the lease.
//
// The busy window is half of IdleAfter (and of the lease): a holder lets a topic go only
// after IdleAfter without a publish, so a publish kicked here while the topic was busy is
// still seen by that holder, and a holder that died is taken over within 1.5 ttl.
func (r *Runner) try(ctx context.Context, wg *sync.WaitGroup, topic ids.ID) {
	now := r.Clock.Now()
	r.mu.Lock()
	until, busy := r.busy[topic]
	skip := r.held[topic] || len(r.held) >= r.MaxHeld || (busy && now.Before(until))
	r.mu.Unlock()
	if skip || ctx.Err() != nil {
		return
	}
	ok, err := r.Engine.LeaseTopic(ctx, topic, r.Owner, r.Lease)
	if err != nil {
		if ctx.Err() == nil {
			r.metrics.errors.WithLabelValues("lease").Inc()
			r.Log.Warn("fanout: taking a topic lease failed", "topic", topic.String(), "error", err)
		}
		return
	}
	r.mu.Lock()
	if !ok {
		r.busy[topic] = now.Add(min(r.IdleAfter, r.Lease) / 2)
		r.mu.Unlock()
		return
	}
	delete(r.busy, topic)
	r.held[topic] = true
	r.mu.Unlock()
	r.metrics.held.Inc()
	wg.Add(1)
	go func() {
		defer wg.Done()
		again := r.hold(ctx, topic)
		r.mu.Lock()
		delete(r.held, topic)
		delete(r.lags, topic)
		// A publish here after the holder's last look (its idle check) found the topic held
		// and was dropped: without this its kick would be lost until the next poll.
		again = again || r.dropped[topic]
		delete(r.dropped, topic)
		r.mu.Unlock()
		r.metrics.held.Dec()
		if again {
			r.Published(topic)
		}
	}()
}

// Held reports whether this runner holds topic now (for tests and the admin listener).
func (r *Runner) Held(topic ids.ID) bool {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[topic]
}

// Lag is, among the topics this runner holds, the largest age in seconds of a log entry some
// binding has not handled yet, as of each topic's last round (0 when all are caught up).
func (r *Runner) Lag() float64 {
	r.init()
	now := r.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var lag time.Duration
	for _, at := range r.lags {
		lag = max(lag, now.Sub(at))
	}
	return lag.Seconds()
}

// setLag records the publish time of a held topic's oldest entry not handled by every
// binding (zero: caught up).
func (r *Runner) setLag(topic ids.ID, oldest time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if oldest.IsZero() {
		delete(r.lags, topic)
		return
	}
	r.lags[topic] = oldest
}
