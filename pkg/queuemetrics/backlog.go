// Package queuemetrics samples, in the background, every queue's counts and every push
// subscription's recent attempts, and exports them to the operator as Prometheus metrics
// with bounded cardinality.
//
// Cardinality: a label per queue is unbounded (tenants create queues), so only the TopN
// queues with the largest backlog (visible + in flight + delayed) in the last round get
// labelled series (project slug, queue name); everything else is in unlabelled totals.
// Push health is labelled likewise for the subscriptions of those TopN queues and counted
// for all. A round examines at most MaxQueues queues and MaxSubscriptions subscriptions and
// reports when it stopped short (queues_backlog_truncated).
//
// Cost: one round lists projects and queues from the metadata store and makes one Stats
// call per queue and one attempts read per subscription, every Every (default 30 s). A
// scrape reads the last round's snapshot and touches no storage.
package queuemetrics

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// Defaults.
const (
	DefaultTopN             = 20
	DefaultEvery            = 30 * time.Second
	DefaultMaxQueues        = 10000
	DefaultMaxSubscriptions = 10000
	// recentAttempts is how many attempts a subscription's health is judged on.
	recentAttempts = 20
)

// Metadata lists what a round samples (meta.Store and meta.SubscriptionStore have it).
type Metadata interface {
	ListProjects(ctx context.Context, page meta.Page) ([]meta.Project, string, error)
	ListQueues(ctx context.Context, projectID ids.ID, prefix string, page meta.Page) ([]meta.Queue, string, error)
}

// Subscriptions lists every push subscription.
type Subscriptions interface {
	ListSubscriptions(ctx context.Context, page meta.Page) ([]meta.Subscription, string, error)
}

// Stats reads one queue's counts (engine.Engine has it).
type Stats interface {
	Stats(ctx context.Context, q engine.Queue) (engine.Stats, error)
}

// Config wires a Sampler.
type Config struct {
	Meta          Metadata
	Subscriptions Subscriptions   // nil: no push health
	Attempts      meta.AttemptLog // nil: no push health
	Engine        Stats
	Clock         clock.Clock
	Logger        *slog.Logger
	TopN          int           // labelled queues (default DefaultTopN)
	Every         time.Duration // round period (default DefaultEvery)
	MaxQueues     int           // queues examined per round (default DefaultMaxQueues)
	// MaxSubscriptions bounds the subscriptions examined per round (default DefaultMaxSubscriptions).
	MaxSubscriptions int
}

// queueSample is one queue's counts in a round.
type queueSample struct {
	project, queue string
	id             ids.ID
	counts         engine.Counts
	oldestAge      float64
	parked         int64 // fifo groups parked
}

func (q queueSample) backlog() int64 { return q.counts.Visible + q.counts.InFlight + q.counts.Delayed }

// subSample is one subscription's health in a round.
type subSample struct {
	project, queue string
	queueID        ids.ID
	paused         bool
	failing        bool    // its latest attempt failed or was throttled
	failureRatio   float64 // of its recent attempts
	sinceSuccess   float64 // seconds since its latest successful attempt; -1: none recorded
	attempts       int
}

// snapshot is what a scrape reports: the last completed round.
type snapshot struct {
	at                  time.Time
	duration            time.Duration
	top                 []queueSample
	parked              []queueSample // every queue sampled with a parked group
	totals              engine.Counts
	queues              int
	truncated           bool
	subs                []subSample // of the top queues
	subsActive, subsOff int
	subsFailing         int
	errors              int
}

// Sampler runs the rounds and is the prometheus.Collector of their results.
type Sampler struct {
	cfg  Config
	mu   sync.Mutex
	last *snapshot
}

// New returns a Sampler; register it, then Run it.
func New(cfg Config) *Sampler {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TopN <= 0 {
		cfg.TopN = DefaultTopN
	}
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.MaxQueues <= 0 {
		cfg.MaxQueues = DefaultMaxQueues
	}
	if cfg.MaxSubscriptions <= 0 {
		cfg.MaxSubscriptions = DefaultMaxSubscriptions
	}
	return &Sampler{cfg: cfg}
}

// Run samples now and then every cfg.Every until ctx ends. (The period is wall time: what
// tests control is a round, which they run with Sample.)
func (s *Sampler) Run(ctx context.Context) {
	for {
		if err := s.Sample(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("backlog metrics: sampling failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.Every):
		}
	}
}

// Sample runs one round and publishes it. A queue whose Stats fail is skipped and counted
// in queues_backlog_sample_errors; a listing that fails fails the round (the previous one
// stays published).
func (s *Sampler) Sample(ctx context.Context) error {
	start := s.cfg.Clock.Now()
	snap := &snapshot{at: start}
	all, err := s.sampleQueues(ctx, snap)
	if err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].backlog() != all[j].backlog() {
			return all[i].backlog() > all[j].backlog()
		}
		return all[i].id.String() < all[j].id.String()
	})
	if len(all) > s.cfg.TopN {
		all = all[:s.cfg.TopN]
	}
	snap.top = all
	if s.cfg.Subscriptions != nil && s.cfg.Attempts != nil {
		if err := s.sampleSubscriptions(ctx, snap); err != nil {
			return err
		}
	}
	snap.duration = s.cfg.Clock.Now().Sub(start)
	s.mu.Lock()
	s.last = snap
	s.mu.Unlock()
	return nil
}

func (s *Sampler) sampleQueues(ctx context.Context, snap *snapshot) ([]queueSample, error) {
	var out []queueSample
	now := snap.at
	err := eachPage(func(cursor string) (string, error) {
		ps, next, err := s.cfg.Meta.ListProjects(ctx, meta.Page{Limit: 100, Cursor: cursor})
		if err != nil {
			return "", err
		}
		for _, p := range ps {
			if snap.queues >= s.cfg.MaxQueues {
				snap.truncated = true
				return "", nil
			}
			if err := s.sampleProject(ctx, p, now, snap, &out); err != nil {
				return "", err
			}
		}
		return next, nil
	})
	return out, err
}

func (s *Sampler) sampleProject(ctx context.Context, p meta.Project, now time.Time, snap *snapshot, out *[]queueSample) error {
	slug := p.ID.Slug(ids.ProjectPrefix)
	return eachPage(func(cursor string) (string, error) {
		qs, next, err := s.cfg.Meta.ListQueues(ctx, p.ID, "", meta.Page{Limit: 100, Cursor: cursor})
		if err != nil {
			return "", err
		}
		for _, q := range qs {
			if snap.queues >= s.cfg.MaxQueues {
				snap.truncated = true
				return "", nil
			}
			snap.queues++
			st, err := s.cfg.Engine.Stats(ctx, q.Engine(nil))
			if err != nil {
				if ctx.Err() != nil {
					return "", ctx.Err()
				}
				snap.errors++
				continue
			}
			c := st.Counts
			snap.totals.Visible += c.Visible
			snap.totals.InFlight += c.InFlight
			snap.totals.Delayed += c.Delayed
			age := 0.0
			if !c.OldestSentAt.IsZero() && c.Visible+c.InFlight+c.Delayed > 0 {
				age = max(0, now.Sub(c.OldestSentAt).Seconds())
			}
			qs := queueSample{project: slug, queue: q.Name, id: q.ID, counts: c, oldestAge: age, parked: st.ParkedGroups}
			*out = append(*out, qs)
			if qs.parked > 0 {
				snap.parked = append(snap.parked, qs)
			}
		}
		return next, nil
	})
}

func (s *Sampler) sampleSubscriptions(ctx context.Context, snap *snapshot) error {
	top := map[ids.ID]queueSample{}
	for _, q := range snap.top {
		top[q.id] = q
	}
	seen := 0
	return eachPage(func(cursor string) (string, error) {
		subs, next, err := s.cfg.Subscriptions.ListSubscriptions(ctx, meta.Page{Limit: 100, Cursor: cursor})
		if err != nil {
			return "", err
		}
		for _, sub := range subs {
			if seen >= s.cfg.MaxSubscriptions {
				snap.truncated = true
				return "", nil
			}
			seen++
			h, err := s.health(ctx, sub, snap.at)
			if err != nil {
				if ctx.Err() != nil {
					return "", ctx.Err()
				}
				snap.errors++
				continue
			}
			switch {
			case sub.Paused:
				snap.subsOff++
			default:
				snap.subsActive++
			}
			if h.failing && !sub.Paused {
				snap.subsFailing++
			}
			if q, ok := top[sub.QueueID]; ok {
				h.project, h.queue = q.project, q.queue
				snap.subs = append(snap.subs, h)
			}
		}
		return next, nil
	})
}

// health judges a subscription by its recent attempts.
func (s *Sampler) health(ctx context.Context, sub meta.Subscription, now time.Time) (subSample, error) {
	h := subSample{queueID: sub.QueueID, paused: sub.Paused, sinceSuccess: -1}
	recent, err := s.cfg.Attempts.Recent(ctx, sub.ID, recentAttempts)
	if err != nil {
		return h, err
	}
	h.attempts = len(recent)
	failed := 0
	for i, a := range recent { // newest first
		bad := a.Outcome == meta.AttemptFailed || a.Outcome == meta.AttemptThrottled
		if bad {
			failed++
		} else if h.sinceSuccess < 0 {
			h.sinceSuccess = max(0, now.Sub(a.At).Seconds())
		}
		if i == 0 {
			h.failing = bad
		}
	}
	if len(recent) > 0 {
		h.failureRatio = float64(failed) / float64(len(recent))
	}
	return h, nil
}

// eachPage calls page with "" and then each cursor it returns until one is "".
func eachPage(page func(cursor string) (string, error)) error {
	cursor := ""
	for {
		next, err := page(cursor)
		if err != nil || next == "" {
			return err
		}
		cursor = next
	}
}
