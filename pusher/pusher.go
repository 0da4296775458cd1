// Package pusher is the push delivery fleet (SPEC §6): every replica runs a Pusher, which
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
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queueshq/queues/pkg/apierr"
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
	// DeadlineMargin is what a pushed message's deadline adds to the push timeout (SPEC §6).
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
	Attempts    AttemptLog
	// Changes, when set, subscribes to announcements of changed subscriptions (queue ids), so
	// a pause or a new endpoint applies at once rather than at the next Refresh.
	Changes func(fn func(ids.ID)) (stop func())
	// Generation, when set, reads the counter the API bumps on every change of queue's
	// subscription before answering it (RedisGenerations, LocalGenerations.Get). Every push
	// first compares it with the generation its subscription copy reflects and re-reads the
	// subscription when it moved, so no push starts under a state older than an answered
	// change (SPEC §6), however late the announcement on Changes arrives.
	Generation func(ctx context.Context, queue ids.ID) (int64, error)
	// Client sends the pushes; nil builds NewHTTPClient(AllowPrivate, RootCAs).
	Client       *http.Client
	AllowPrivate bool
	RootCAs      *x509.CertPool
	// Clock is the engine's clock: deadlines and retry delays are computed on it.
	Clock clock.Clock
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

	// OnAttempt, when set, is called after each attempt is settled and logged; OnGiveBack after
	// a received batch was given back unsent. Tests wait on them instead of sleeping.
	OnAttempt  func(queue ids.ID, a Attempt)
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
	if cfg.Engine == nil || cfg.Store == nil || cfg.Receipts == nil || cfg.Coordinator == nil {
		return nil, errors.New("pusher: engine, store, receipts and coordinator are required")
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
	if cfg.Attempts == nil {
		cfg.Attempts = NewMemoryAttempts()
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
		shares: newShares(cfg.MaxInFlight)}
	if p.client == nil {
		p.client = NewHTTPClient(ClientOptions{AllowPrivate: cfg.AllowPrivate, RootCAs: cfg.RootCAs})
	}
	p.ioCtx, p.ioStop = context.WithCancel(context.Background())
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

// balance renews the leases held, drops subscriptions that are gone or beyond this replica's
// share, and takes free ones up to the share.
func (p *Pusher) balance(ctx context.Context, subs []meta.Subscription, fresh bool, members int) {
	byQueue := make(map[ids.ID]meta.Subscription, len(subs))
	for _, s := range subs {
		byQueue[s.QueueID] = s
	}
	p.mu.Lock()
	held := make([]*worker, 0, len(p.workers))
	for _, w := range p.workers {
		held = append(held, w)
	}
	p.mu.Unlock()
	for _, w := range held {
		s, ok := byQueue[w.qid]
		if !ok {
			p.drop(w, true)
			continue
		}
		renewed, err := p.cfg.Coordinator.Renew(ctx, w.qid, p.cfg.Member, w.token, p.cfg.LeaseTTL)
		switch {
		case err != nil:
			p.log.Warn("renewing a lease failed", "queue", w.qid.String(), "err", err)
		case !renewed:
			p.log.Warn("lease lost; stopping pushes for the subscription", "queue", w.qid.String())
			p.drop(w, false)
		default:
			w.leaseUntil.Store(int64(time.Since(p.start) + p.cfg.LeaseTTL))
			w.apply(ctx, s, fresh)
		}
	}
	share := (len(subs) + members - 1) / max(members, 1)
	p.mu.Lock()
	n := len(p.workers)
	var extra []*worker
	if n > share {
		ws := make([]*worker, 0, n)
		for _, w := range p.workers {
			ws = append(ws, w)
		}
		// Give back the subscriptions this replica least prefers.
		slices.SortFunc(ws, func(a, b *worker) int { return -cmpU(p.pref(a.qid), p.pref(b.qid)) })
		extra = ws[:n-share]
	}
	p.mu.Unlock()
	for _, w := range extra {
		p.drop(w, true)
	}
	if n >= share {
		p.m.leases.Set(float64(len(p.Held())))
		return
	}
	free := make([]meta.Subscription, 0, len(subs))
	p.mu.Lock()
	for _, s := range subs {
		if _, ok := p.workers[s.QueueID]; !ok {
			free = append(free, s)
		}
	}
	p.mu.Unlock()
	slices.SortFunc(free, func(a, b meta.Subscription) int { return cmpU(p.pref(a.QueueID), p.pref(b.QueueID)) })
	for _, s := range free {
		if n >= share || ctx.Err() != nil {
			break
		}
		tok, ok, err := p.cfg.Coordinator.Acquire(ctx, s.QueueID, p.cfg.Member, p.cfg.LeaseTTL)
		if err != nil {
			p.log.Warn("acquiring a lease failed", "queue", s.QueueID.String(), "err", err)
			continue
		}
		if !ok {
			continue
		}
		if p.startWorker(ctx, s, tok) {
			n++
		}
	}
	p.m.leases.Set(float64(len(p.Held())))
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pref orders subscriptions differently on every replica (rendezvous hashing), so replicas
// reach for different ones first.
func (p *Pusher) pref(q ids.ID) uint64 {
	h := fnv.New64a()
	h.Write([]byte(p.cfg.Member))
	h.Write(q[:])
	return h.Sum64()
}

// startWorker begins pushing for s under lease token tok.
func (p *Pusher) startWorker(ctx context.Context, s meta.Subscription, tok int64) bool {
	q, err := p.engineQueue(ctx, s.QueueID)
	if apierr.CodeOf(err) == apierr.NotFound {
		// The queue was deleted and its subscription outlived it: finish the delete.
		if err := p.cfg.Store.DeleteSubscription(ctx, s.QueueID); err != nil && apierr.CodeOf(err) != apierr.NotFound {
			p.log.Warn("deleting the subscription of a deleted queue failed", "queue", s.QueueID.String(), "err", err)
		}
		_ = p.cfg.Coordinator.Release(ctx, s.QueueID, p.cfg.Member, tok)
		return false
	}
	if err != nil {
		p.log.Warn("reading a subscription's queue failed", "queue", s.QueueID.String(), "err", err)
		_ = p.cfg.Coordinator.Release(ctx, s.QueueID, p.cfg.Member, tok)
		return false
	}
	w := &worker{p: p, qid: s.QueueID, token: tok, flow: newFlow(s.MaxInFlight), changed: make(chan struct{}), gen: -1, done: make(chan struct{})}
	w.sub, w.q = s, q
	w.leaseUntil.Store(int64(time.Since(p.start) + p.cfg.LeaseTTL))
	w.ctx, w.cancel = context.WithCancel(context.Background())
	p.mu.Lock()
	p.workers[s.QueueID] = w
	p.mu.Unlock()
	p.shares.join(s.QueueID, s.ProjectID)
	go w.run()
	if p.OnApplied != nil {
		p.OnApplied(s)
	}
	return true
}

// drop stops a worker; its pushes in progress finish in the background, then the lease is
// released (when release, and the lease is still ours).
func (p *Pusher) drop(w *worker, release bool) {
	p.mu.Lock()
	mine := p.workers[w.qid] == w
	if mine {
		delete(p.workers, w.qid)
	}
	p.mu.Unlock()
	if mine {
		p.shares.leave(w.qid)
	}
	w.cancel()
	go func() {
		w.wait()
		if release && !p.killed.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = p.cfg.Coordinator.Release(ctx, w.qid, p.cfg.Member, w.token)
		}
	}()
}

// stopAll is the graceful stop: every worker stops receiving; pushes in progress get Grace to
// finish; leases are released and the replica leaves the fleet.
func (p *Pusher) stopAll() {
	p.mu.Lock()
	ws := make([]*worker, 0, len(p.workers))
	for _, w := range p.workers {
		ws = append(ws, w)
	}
	p.workers = map[ids.ID]*worker{}
	p.mu.Unlock()
	for _, w := range ws {
		p.shares.leave(w.qid)
		w.cancel()
	}
	done := make(chan struct{})
	go func() {
		for _, w := range ws {
			w.wait()
		}
		close(done)
	}()
	t := time.NewTimer(p.cfg.Grace)
	select {
	case <-done:
		t.Stop()
	case <-t.C:
		p.ioStop()
		<-done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, w := range ws {
		_ = p.cfg.Coordinator.Release(ctx, w.qid, p.cfg.Member, w.token)
	}
	_ = p.cfg.Coordinator.Leave(ctx, p.cfg.Member)
	p.m.leases.Set(0)
}

// engineQueue reads a queue's settings with its dead-letter queue's.
func (p *Pusher) engineQueue(ctx context.Context, qid ids.ID) (queueInfo, error) {
	q, err := p.cfg.Store.GetQueueByID(ctx, qid)
	if err != nil {
		return queueInfo{}, err
	}
	info := queueInfo{name: q.Name, eq: q.Engine(nil)}
	if q.Redrive != nil {
		dlq, err := p.cfg.Store.GetQueueByID(ctx, q.Redrive.DeadLetterQueue)
		switch {
		case err == nil:
			info.eq = q.Engine(&dlq)
		case apierr.CodeOf(err) != apierr.NotFound:
			return queueInfo{}, err
		}
	}
	return info, nil
}

type queueInfo struct {
	name string
	eq   engine.Queue
}

// worker pushes for one subscription while its replica holds the lease.
type worker struct {
	p     *Pusher
	qid   ids.ID
	token int64
	flow  *flow

	mu      sync.Mutex
	sub     meta.Subscription
	q       queueInfo
	changed chan struct{} // closed and replaced when sub or q changes
	gen     int64         // the change generation sub reflects (-1: not known yet)

	// leaseUntil is when the lease ends unless renewed (time since p.start).
	leaseUntil atomic.Int64

	ctx      context.Context // receiving; cancelled to stop
	cancel   context.CancelFunc
	inFlight sync.WaitGroup
	done     chan struct{}
}

func (w *worker) wait() {
	<-w.done
	w.inFlight.Wait()
}

func (w *worker) snapshot() (meta.Subscription, queueInfo, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sub, w.q, w.changed
}

// apply installs a newer subscription version, and re-reads the queue's settings when
// reloadQueue.
func (w *worker) apply(ctx context.Context, s meta.Subscription, reloadQueue bool) {
	if reloadQueue {
		q, err := w.p.engineQueue(ctx, w.qid)
		if apierr.CodeOf(err) == apierr.NotFound {
			w.p.drop(w, true)
			return
		}
		if err == nil {
			w.mu.Lock()
			w.q = q
			w.mu.Unlock()
		}
	}
	w.mu.Lock()
	newer := s.Version > w.sub.Version
	if newer {
		w.sub = s
		close(w.changed)
		w.changed = make(chan struct{})
	}
	w.mu.Unlock()
	if newer {
		w.flow.setMax(s.MaxInFlight)
		if w.p.OnApplied != nil {
			w.p.OnApplied(s)
		}
	}
}

// refresh re-reads the subscription (after an announcement, or because its generation moved)
// and reports whether the worker still pushes for it.
func (w *worker) refresh(ctx context.Context) bool {
	var gen int64
	var gerr error = errNoGenerations
	if w.p.cfg.Generation != nil {
		// Read before the subscription: a change counted in gen is then in what is read.
		gen, gerr = w.p.cfg.Generation(ctx, w.qid)
	}
	s, err := w.p.cfg.Store.GetSubscription(ctx, w.qid)
	cur, _, _ := w.snapshot()
	switch {
	case apierr.CodeOf(err) == apierr.NotFound:
		w.p.drop(w, true)
		return false
	case err != nil:
		w.p.log.Warn("reading a changed subscription failed", "queue", w.qid.String(), "err", err)
		return false
	case s.ID != cur.ID:
		// Deleted and created again: start over with the new one.
		w.p.drop(w, true)
		w.p.kickNow()
		return false
	}
	w.apply(ctx, s, true)
	if gerr == nil {
		w.mu.Lock()
		w.gen = max(w.gen, gen)
		w.mu.Unlock()
	}
	return w.ctx.Err() == nil
}

var errNoGenerations = errors.New("pusher: no generation counters")

// current returns the subscription a push may start under now: the copy the worker holds when
// no change was answered since it was read, else a fresh read. ok is false when no push may
// start (the subscription is gone, or its state cannot be known).
func (w *worker) current() (sub meta.Subscription, ok bool) {
	if w.p.cfg.Generation == nil {
		sub, _, _ = w.snapshot()
		return sub, true
	}
	ctx, cancel := context.WithTimeout(w.p.ioCtx, 5*time.Second)
	defer cancel()
	gen, err := w.p.cfg.Generation(ctx, w.qid)
	if err != nil {
		w.p.log.Warn("reading the subscription's change generation failed", "queue", w.qid.String(), "err", err)
		return sub, false
	}
	w.mu.Lock()
	known := w.gen
	w.mu.Unlock()
	if gen != known && !w.refresh(ctx) {
		return sub, false
	}
	sub, _, _ = w.snapshot()
	return sub, true
}

func (w *worker) leaseValid() bool {
	return time.Duration(w.leaseUntil.Load()) > time.Since(w.p.start)
}

func (w *worker) run() {
	defer close(w.done)
	watch, unwatch := w.p.cfg.Engine.Watch(w.qid)
	defer unwatch()
	for w.ctx.Err() == nil {
		sub, q, changed := w.snapshot()
		if sub.Paused {
			select {
			case <-changed:
			case <-w.ctx.Done():
			}
			continue
		}
		if err := w.flow.acquire(w.ctx); err != nil {
			return
		}
		// The replica-wide slot is taken before receiving, so no batch waits for one
		// while its messages are in flight.
		if err := w.p.shares.acquire(w.ctx, w.qid); err != nil {
			w.flow.settle(flowNone)
			return
		}
		batch, receivedAt := w.collect(sub, q, watch, changed)
		if len(batch) == 0 {
			w.p.shares.release(w.qid)
			w.flow.settle(flowNone)
			continue
		}
		if w.ctx.Err() != nil {
			w.giveBack(q, batch)
			w.p.shares.release(w.qid)
			w.flow.settle(flowNone)
			return
		}
		w.inFlight.Add(1)
		go func() {
			defer w.inFlight.Done()
			res, a := w.deliver(q, batch, receivedAt)
			w.p.shares.release(w.qid)
			w.flow.settle(res)
			if a != nil && w.p.cfg.OnAttempt != nil {
				w.p.cfg.OnAttempt(w.qid, *a)
			}
		}()
	}
}

// collect receives up to batchSize messages, holding a partial batch at most batchWindowMs
// after its first message arrived. It returns nothing when the subscription changed or the
// worker stops while the batch is empty.
func (w *worker) collect(sub meta.Subscription, q queueInfo, watch <-chan struct{}, changed <-chan struct{}) ([]engine.Received, time.Time) {
	clk := w.p.cfg.Clock
	timeout := time.Duration(sub.TimeoutSeconds) * time.Second
	window := time.Duration(sub.BatchWindowMs) * time.Millisecond
	vis := max(q.eq.VisibilityTimeout, timeout+DeadlineMargin) + window
	var batch []engine.Received
	var first time.Time
	var receivedAt time.Time
	for {
		want := min(engine.MaxBatch, sub.BatchSize-len(batch))
		before := clk.Now()
		res, err := w.p.cfg.Engine.Receive(w.ctx, q.eq, engine.ReceiveRequest{Max: want, Visibility: vis})
		if err != nil {
			if w.ctx.Err() != nil || len(batch) > 0 {
				return batch, receivedAt
			}
			w.p.log.Warn("receive for push failed", "queue", w.qid.String(), "err", err)
			if !sleep(w.ctx, w.p.cfg.IdlePoll) {
				return nil, time.Time{}
			}
			continue
		}
		if len(res.Messages) > 0 && len(batch) == 0 {
			first, receivedAt = time.Now(), before
		}
		batch = append(batch, res.Messages...)
		if len(batch) >= sub.BatchSize {
			return batch, receivedAt
		}
		if len(res.Messages) == want {
			continue // more may be waiting
		}
		var wait time.Duration
		if len(batch) > 0 {
			if wait = window - time.Since(first); wait <= 0 {
				return batch, receivedAt
			}
		} else {
			wait = w.p.cfg.IdlePoll
			if !res.NextVisibleAt.IsZero() {
				wait = min(wait, max(res.NextVisibleAt.Sub(clk.Now()), time.Millisecond))
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-w.ctx.Done():
			t.Stop()
			return batch, receivedAt
		case <-changed:
			t.Stop()
			if len(batch) == 0 {
				return nil, time.Time{}
			}
			changed = nil
		case <-watch:
			t.Stop()
		case <-t.C:
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// giveBack releases a batch that will not be pushed.
func (w *worker) giveBack(q queueInfo, batch []engine.Received) {
	cs := make([]engine.VisibilityChange, len(batch))
	for i, m := range batch {
		cs[i] = engine.VisibilityChange{Delivery: m.Delivery}
	}
	ctx, cancel := context.WithTimeout(w.p.ioCtx, 10*time.Second)
	defer cancel()
	if _, err := w.p.cfg.Engine.ChangeVisibility(ctx, q.eq, cs); err != nil && ctx.Err() == nil {
		w.p.log.Warn("giving back a batch failed; it returns at its deadline", "queue", w.qid.String(), "err", err)
	}
	w.p.m.messages.WithLabelValues(mReleased).Add(float64(len(batch)))
	if w.p.cfg.OnGiveBack != nil {
		w.p.cfg.OnGiveBack(w.qid, len(batch))
	}
}

// pushMessage is one message of the request body.
type pushMessage struct {
	MessageID          string            `json:"messageId"`
	Body               string            `json:"body"`
	Attributes         map[string]string `json:"attributes"`
	ReceiveCount       int               `json:"receiveCount"`
	SentAt             string            `json:"sentAt"`
	GroupID            string            `json:"groupId,omitempty"`
	SequenceNumber     string            `json:"sequenceNumber,omitempty"`
	ReceiptHandle      string            `json:"receiptHandle"`
	VisibilityDeadline string            `json:"visibilityDeadline"`
	Traceparent        string            `json:"traceparent,omitempty"`
}

type pushQueue struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type pushBody struct {
	Subscription string        `json:"subscription"`
	Queue        pushQueue     `json:"queue"`
	Messages     []pushMessage `json:"messages"`
}

const timeFormat = "2006-01-02T15:04:05.000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

// deliver checks the time left, pushes the batch, settles it and logs the attempt.
func (w *worker) deliver(q queueInfo, batch []engine.Received, receivedAt time.Time) (flowResult, *Attempt) {
	p := w.p
	sub, ok := w.current()
	if !ok {
		w.giveBack(q, batch)
		return flowNone, nil
	}
	now := p.cfg.Clock.Now()
	timeout := time.Duration(sub.TimeoutSeconds) * time.Second
	deadline := batch[0].VisibilityDeadline
	for _, m := range batch[1:] {
		if m.VisibilityDeadline.Before(deadline) {
			deadline = m.VisibilityDeadline
		}
	}
	if sub.Paused || !w.leaseValid() || deadline.Sub(now) < timeout+p.cfg.SendMargin {
		w.giveBack(q, batch)
		return flowNone, nil
	}
	body := pushBody{Subscription: sub.ID.Slug(ids.SubscriptionPrefix), Queue: pushQueue{ID: w.qid.String(), Name: q.name}, Messages: make([]pushMessage, len(batch))}
	inBatch := make(map[string]bool, len(batch))
	msgIDs := make([]string, len(batch))
	for i, m := range batch {
		attrs, tp := engine.SplitTraceparent(m.Attributes)
		if attrs == nil {
			attrs = map[string]string{}
		}
		pm := pushMessage{
			MessageID: m.MessageID.String(), Body: m.Body, Attributes: attrs, ReceiveCount: m.ReceiveCount,
			SentAt: formatTime(m.SentAt), GroupID: m.GroupID, ReceiptHandle: p.cfg.Receipts.Sign(m.Delivery),
			VisibilityDeadline: formatTime(m.VisibilityDeadline), Traceparent: tp,
		}
		if q.eq.Type == engine.FIFO {
			pm.SequenceNumber = strconv.FormatUint(m.SequenceNumber, 10)
		}
		body.Messages[i] = pm
		inBatch[pm.MessageID] = true
		msgIDs[i] = pm.MessageID
	}
	data, err := json.Marshal(body)
	if err != nil {
		w.giveBack(q, batch)
		return flowNone, nil
	}
	attemptID := ids.New().String()
	ts := time.Now().Unix()
	ctx, cancel := context.WithTimeout(p.ioCtx, timeout)
	defer cancel()
	ctx, span := startPushSpan(ctx, sub.ID, w.qid, body.Messages)
	defer span.End()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Endpoint, bytes.NewReader(data))
	if err != nil {
		w.giveBack(q, batch)
		return flowNone, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "queues-pusher/1")
	req.Header.Set("webhook-id", attemptID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", Signature(sub.Secrets(now), attemptID, ts, data))
	setTraceparent(req, ctx, body.Messages)
	p.m.messages.WithLabelValues(mPushed).Add(float64(len(batch)))
	p.meter(sub.ProjectID, batch)

	start := time.Now()
	var v verdict
	status := 0
	resp, err := p.client.Do(req)
	if err == nil {
		status = resp.StatusCode
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
		_ = resp.Body.Close()
		if rerr != nil {
			err = rerr
		} else {
			overflow := len(raw) > MaxResponseBytes
			if overflow {
				raw = raw[:MaxResponseBytes]
			}
			v = classify(resp.StatusCode, resp.Header, raw, overflow, inBatch, now)
		}
	}
	latency := time.Since(start)
	if err != nil {
		if p.killed.Load() {
			return flowNone, nil // killed mid-flight: settle nothing, as a crashed process would
		}
		class := errClass(err)
		v = verdict{kind: failed, errClass: class, detail: errDetail(err, class), slowDown: class == ErrTimeout}
	}
	p.m.latency.Observe(latency.Seconds())
	endPushSpan(span, status, v.errClass)
	w.settle(q, batch, v, receivedAt)

	a := Attempt{At: now.UTC(), AttemptID: attemptID, MessageIDs: msgIDs, StatusCode: status, LatencyMs: latency.Milliseconds(), Error: v.errClass, Detail: v.detail}
	res := flowSuccess
	switch v.kind {
	case ackAll:
		a.Outcome = AttemptAcknowledged
	case deferAll:
		a.Outcome = AttemptDeferred
	case perMessage:
		a.Outcome = AttemptSettled
	case throttled:
		a.Outcome, res = AttemptThrottled, flowThrottle
	default:
		a.Outcome, res = AttemptFailed, flowFailure
		if v.slowDown {
			res = flowThrottle
		}
	}
	if v.errClass != "" {
		p.m.errors.WithLabelValues(v.errClass).Inc()
	}
	p.m.batches.WithLabelValues(a.Outcome).Inc()
	lctx, lcancel := context.WithTimeout(p.ioCtx, 5*time.Second)
	defer lcancel()
	if err := p.cfg.Attempts.Record(lctx, sub.ID, a); err != nil && lctx.Err() == nil {
		p.log.Warn("recording a push attempt failed", "queue", w.qid.String(), "err", err)
	}
	if v.errClass != "" {
		p.log.Info("push attempt failed", "queue", w.qid.String(), "host", hostOf(sub.Endpoint), "attempt_id", attemptID,
			"status", status, "error", v.errClass, "detail", v.detail, "messages", len(batch))
	}
	return res, &a
}

func hostOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Host
}

// errClass names a transport failure.
func errClass(err error) string {
	var ne net.Error
	var cve *tls.CertificateVerificationError
	var uae x509.UnknownAuthorityError
	var hne x509.HostnameError
	var ci x509.CertificateInvalidError
	var rhe tls.RecordHeaderError
	var ae tls.AlertError
	switch {
	case errors.Is(err, ErrBlockedAddress):
		return ErrBlocked
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ErrTimeout
	case errors.As(err, &cve), errors.As(err, &uae), errors.As(err, &hne), errors.As(err, &ci), errors.As(err, &rhe), errors.As(err, &ae):
		return ErrTLS
	}
	return ErrConnection
}

func errDetail(err error, class string) string {
	switch class {
	case ErrTimeout:
		return "no complete response within the push timeout"
	case ErrBlocked:
		return "the endpoint resolved to a non-public address"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // without the URL, which may carry secrets in its query
	}
	return truncate(err.Error(), 200)
}

// settle applies a verdict to the batch through the engine.
func (w *worker) settle(q queueInfo, batch []engine.Received, v verdict, receivedAt time.Time) {
	p := w.p
	now := p.cfg.Clock.Now()
	// A message stays in flight at most engine.MaxInFlight from its receive.
	limit := receivedAt.Add(engine.MaxInFlight).Sub(now) - time.Second
	delay := func(d time.Duration) time.Duration { return max(min(d, limit, engine.MaxVisibility), 0) }
	var acks []engine.Delivery
	var changes []engine.VisibilityChange
	var dls []engine.DeadLetterRequest
	deferred := 0
	for _, m := range batch {
		switch v.kind {
		case ackAll:
			acks = append(acks, m.Delivery)
		case deferAll:
			deferred++
		case throttled:
			changes = append(changes, engine.VisibilityChange{Delivery: m.Delivery, Visibility: delay(v.retryAfter)})
		case failed:
			changes = append(changes, engine.VisibilityChange{Delivery: m.Delivery, Visibility: delay(Backoff(m.ReceiveCount, p.cfg.RandN))})
		case perMessage:
			r, listed := v.results[m.MessageID.String()]
			switch {
			case !listed || r.Outcome == OutcomeAck:
				acks = append(acks, m.Delivery)
			case r.Outcome == OutcomeDefer:
				deferred++
			case r.Outcome == OutcomeDeadLetter:
				dls = append(dls, engine.DeadLetterRequest{Delivery: m.Delivery, Reason: r.Reason})
			default: // retry
				d := time.Duration(0)
				if r.RetryAfterSeconds != nil {
					d = delay(time.Duration(*r.RetryAfterSeconds) * time.Second)
				}
				changes = append(changes, engine.VisibilityChange{Delivery: m.Delivery, Visibility: d})
			}
		}
	}
	ctx, cancel := context.WithTimeout(p.ioCtx, 10*time.Second)
	defer cancel()
	report := func(op string, errs []error, err error) int {
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("settling pushed messages failed; they return at their deadline", "op", op, "queue", w.qid.String(), "err", err)
			}
			return 0
		}
		ok := 0
		for _, e := range errs {
			if e == nil {
				ok++
			}
		}
		return ok
	}
	if len(acks) > 0 {
		errs, err := p.cfg.Engine.Ack(ctx, q.eq, acks)
		p.m.messages.WithLabelValues(mAcknowledged).Add(float64(report("ack", errs, err)))
	}
	if len(changes) > 0 {
		errs, err := p.cfg.Engine.ChangeVisibility(ctx, q.eq, changes)
		p.m.messages.WithLabelValues(mRetried).Add(float64(report("retry", errs, err)))
	}
	if len(dls) > 0 {
		errs, err := p.cfg.Engine.DeadLetter(ctx, q.eq, dls)
		p.m.messages.WithLabelValues(mDeadLettered).Add(float64(report("dead-letter", errs, err)))
	}
	p.m.messages.WithLabelValues(mDeferred).Add(float64(deferred))
}
