package pusher

// The worker loop of one subscription: collect a batch from the engine, deliver it, give
// back what cannot be pushed in time.

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// worker pushes for one subscription while its replica holds the lease.
type worker struct {
	p     *Pusher
	qid   ids.ID
	token int64
	flow  *flow
	// limits keeps the rate and keyed budgets (keyed.go).
	limits *limiter
	// settling bounds the answered pushes being settled after their slots were released.
	settling chan struct{}

	mu      sync.Mutex
	sub     meta.Subscription
	q       queueInfo
	changed chan struct{} // closed and replaced when sub or q changes
	gen     int64         // the change generation sub reflects (-1: not known yet)
	hold    time.Time     // no push starts before (a throttle's Retry-After; injected clock)

	// failing is whether the last attempt failed (the failing gauge).
	failing atomic.Bool
	// health folds the attempts' outcomes into the health log off the push path (health.go).
	health healthQueue

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
		if errors.Is(err, meta.ErrNotFound) {
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
	case errors.Is(err, meta.ErrNotFound):
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

// run runs the subscription's receive loops (Config.ReceiveLoops) until the worker stops, then
// returns the messages flow control still holds.
func (w *worker) run() {
	defer close(w.done)
	var wg sync.WaitGroup
	for range max(w.p.cfg.ReceiveLoops, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.receiveLoop()
		}()
	}
	wg.Wait()
	w.limits.stop()
	_, q, _ := w.snapshot()
	w.cancelHeld(q, w.limits.drain())
}

func (w *worker) receiveLoop() {
	watch, unwatch := w.p.cfg.Engine.Watch(w.qid)
	defer unwatch()
	for w.ctx.Err() == nil {
		sub, q, changed := w.snapshot()
		if sub.Paused || sub.Disabled {
			// Messages flow control holds go back unsent and uncounted while paused or disabled.
			w.cancelHeld(q, w.limits.drain())
			select {
			case <-changed:
			case <-w.ctx.Done():
			}
			continue
		}
		if wait := w.held(); wait > 0 {
			// The endpoint asked for time: wait it out (re-reading the clock at least every
			// IdlePoll, as it may be a test's), or until the subscription changes.
			t := time.NewTimer(min(wait, w.p.cfg.IdlePoll))
			select {
			case <-changed:
			case <-w.ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		if sub.FlowControl.Keyed() {
			w.keyedRound(sub, q, watch, changed)
			continue
		}
		// Held messages of a flow control just turned off go back unsent and uncounted.
		w.cancelHeld(q, w.limits.drain())
		if !w.rateReady(sub, changed) {
			continue
		}
		if err := w.flow.admit(w.ctx); err != nil {
			return
		}
		// The replica-wide slot is taken before receiving, so no batch waits for one
		// while its messages are in flight.
		sl, err := w.p.shares.claim(w.ctx, w.qid)
		if err != nil {
			w.flow.done(flowNone)
			return
		}
		batch, receivedAt := w.collect(sub, q, watch, changed, sl.ctx.Done())
		if len(batch) == 0 {
			w.p.shares.release(sl)
			w.flow.done(flowNone)
			continue
		}
		if w.ctx.Err() != nil {
			w.giveBack(q, batch)
			w.p.shares.release(sl)
			w.flow.done(flowNone)
			return
		}
		if sub.MaxMessagesPerSecond > 0 {
			w.limits.takeSub(w.p.cfg.Clock.Now(), len(batch))
		}
		w.inFlight.Add(1)
		go func() {
			defer w.inFlight.Done()
			res, a := w.deliver(sl, q, batch, receivedAt)
			w.settling <- struct{}{} // with the slots still held: no more than maxSettling wait
			w.p.shares.release(sl)
			w.flow.done(res)
			w.finish(a)
			<-w.settling
		}()
	}
}

// rateReady waits, before a receive, until the subscription's maxMessagesPerSecond lets a
// full batch go; it returns false when the subscription changed or the worker stops meanwhile
// (the caller starts over). Waiting before the receive keeps messages in the queue, not in
// flight, while the rate is spent.
func (w *worker) rateReady(sub meta.Subscription, changed <-chan struct{}) bool {
	if sub.MaxMessagesPerSecond <= 0 {
		return true
	}
	for {
		wait := w.limits.subWait(sub, w.p.cfg.Clock.Now(), sub.BatchSize)
		if wait <= 0 {
			return true
		}
		if w.p.cfg.OnRateLimited != nil {
			w.p.cfg.OnRateLimited(w.qid, "", true)
		}
		t := time.NewTimer(min(wait, rateRecheck))
		select {
		case <-t.C:
		case <-changed:
			t.Stop()
			return false
		case <-w.ctx.Done():
			t.Stop()
			return false
		}
	}
}

// collect receives up to batchSize messages, holding a partial batch at most batchWindowMs
// after its first message arrived. It returns nothing when the subscription changed or the
// worker stops while the batch is empty, and what it has when its slot is preempted.
func (w *worker) collect(sub meta.Subscription, q queueInfo, watch, changed, lost <-chan struct{}) ([]engine.Received, time.Time) {
	clk := w.p.cfg.Clock
	timeout := time.Duration(sub.TimeoutSeconds) * time.Second
	window := time.Duration(sub.BatchWindowMs) * time.Millisecond
	vis := max(q.eq.VisibilityTimeout, timeout+DeadlineMargin) + window
	var batch []engine.Received
	var first time.Time
	var receivedAt time.Time
	var size int64
	for {
		want := min(engine.MaxBatch, sub.BatchSize-len(batch), fitting(q.eq, size, len(batch)))
		if want <= 0 {
			return batch, receivedAt // full by bytes
		}
		before := clk.Now()
		res, err := w.p.cfg.Engine.Receive(w.ctx, q.eq, engine.ReceiveRequest{Max: want, Visibility: vis, BindTo: w.consumerID()})
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
		if size = batchBytes(batch); size > MaxBatchBytes {
			return w.cutToBytes(q, batch), receivedAt
		}
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
		case <-lost:
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

// MaxBatchBytes bounds the messages of one push (docs/api-tour.md: a push batch carries at most
// 5 MiB of messages, engine.PayloadBytes each); a single message larger than that still goes,
// alone.
const MaxBatchBytes = 5 << 20

// fitting is how many more messages a batch of n messages and size bytes may receive without
// passing MaxBatchBytes, each counted at the queue's maxMessageBytes (at least one for an
// empty batch): a receive never takes what the batch could not carry.
func fitting(q engine.Queue, size int64, n int) int {
	fit := int((MaxBatchBytes - size) / int64(q.MessageLimit()))
	if n == 0 {
		fit = max(fit, 1)
	}
	return fit
}

func batchBytes(batch []engine.Received) int64 {
	var n int64
	for _, m := range batch {
		n += engine.PayloadBytes(m.Body, m.Attributes)
	}
	return n
}

// cutToBytes keeps the longest prefix of batch within MaxBatchBytes (at least one message)
// and gives the rest back. Only messages stored before the queue's maxMessageBytes was lowered
// can make a batch pass the bound fitting keeps; on an at-most-once queue, whose received
// messages cannot be given back, the batch goes whole.
func (w *worker) cutToBytes(q queueInfo, batch []engine.Received) []engine.Received {
	if q.eq.AtMostOnce {
		return batch
	}
	var size int64
	for i, m := range batch {
		if size += engine.PayloadBytes(m.Body, m.Attributes); size > MaxBatchBytes && i > 0 {
			w.giveBack(q, batch[i:])
			return batch[:i]
		}
	}
	return batch
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

// giveBack releases a batch that will not be pushed (on an at-most-once queue it left the
// queue when received, and stays gone).
func (w *worker) giveBack(q queueInfo, batch []engine.Received) {
	if q.eq.AtMostOnce {
		return // removed when received: at most once means it is not delivered again
	}
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

// consumerID is the consumer the worker's receives bind an exclusive fifo queue's groups to
// (engine/grouppolicy.go): one per lease, so a group stays with this pusher while it holds the
// subscription and passes to the next holder once its bindings lapse.
func (w *worker) consumerID() string { return "push-lease-" + strconv.FormatInt(w.token, 10) }
