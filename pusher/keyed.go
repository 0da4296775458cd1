package pusher

// Rate and keyed flow control (docs/push.md): a subscription's maxMessagesPerSecond, and its
// flowControl, under which messages whose key attribute has the same value share one key's
// budget of batches in flight (parallelism) and messages a second.
//
// Only the replica holding a subscription's lease pushes for it (lease.go), so budgets kept
// in its memory hold across the fleet: no other process pushes the subscription's messages
// meanwhile. (When a lease moves, the old holder's pushes already sent finish while the new
// holder starts: for at most one push timeout a key may have up to twice its parallelism.)
//
// Under flowControl every push carries one key's messages. A received message whose key is
// at its budget is held here — still in flight in the engine, its deadline extended while it
// waits, its receiveCount untouched — while the other keys' messages keep being received and
// pushed: a slow key never holds up the others. Each key holds at most holdPerKey messages,
// the subscription at most holdMessages (and holdBytes); a message beyond that is returned
// to the queue for overflowDelay, and that return counts as a delivery (as a retry does).

import (
	"context"
	"sync"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
)

// Bounds of what a keyed subscription holds unsent.
const (
	holdMessages  = 10000
	holdBytes     = 32 << 20
	overflowDelay = time.Second
)

// holdPerKey is how many messages one key may hold: two rounds of its parallelism, at least
// one batch, and no more than a quarter of the subscription's hold.
func holdPerKey(sub meta.Subscription) int {
	return max(min(2*sub.FlowControl.Parallelism*sub.BatchSize, holdMessages/4), sub.BatchSize)
}

// limiter is a subscription's rate and keyed budgets on this replica.
type limiter struct {
	mu      sync.Mutex
	subRate bucket
	keys    map[string]*keyState
	held    int
	bytes   int64
	groups  map[string]int // fifo: batches in flight by group id
	wake    chan struct{}  // closed and replaced when a held message may have budget
	timer   *time.Timer    // the pending wake of a key waiting for tokens
	timerAt time.Time
}

type keyState struct {
	held     []heldMessage // in receive order
	inFlight int
	rate     bucket
}

type heldMessage struct {
	m          engine.Received
	receivedAt time.Time
}

// keyBatch is one key's batch, taken from its hold to be pushed.
type keyBatch struct {
	key        string
	msgs       []engine.Received
	receivedAt time.Time // the earliest receive among msgs
}

func newLimiter() *limiter {
	return &limiter{keys: map[string]*keyState{}, groups: map[string]int{}, wake: make(chan struct{})}
}

// wakeCh is closed when a held message may have budget again.
func (l *limiter) wakeCh() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wake
}

func (l *limiter) signal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.signalLocked()
}

func (l *limiter) signalLocked() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// wakeIn schedules a wake d from now (on the real clock, at most rateRecheck away).
func (l *limiter) wakeIn(d time.Duration) {
	d = min(d, rateRecheck)
	at := time.Now().Add(d)
	if l.timer != nil && l.timerAt.Before(at) && time.Until(l.timerAt) > 0 {
		return // an earlier wake is pending
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	l.timerAt = at
	l.timer = time.AfterFunc(d, l.signal)
}

func (l *limiter) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
}

// subWait returns how long until the subscription's rate lets a batch of n go, taking the
// tokens when it does (n is then the messages actually pushed: see takeSub).
func (l *limiter) subWait(sub meta.Subscription, now time.Time, n int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subRate.set(sub.MaxMessagesPerSecond, sub.BatchSize, now)
	return l.subRate.wait(now, n)
}

// takeSub records n messages pushed under the subscription's rate.
func (l *limiter) takeSub(now time.Time, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subRate.take(now, n)
}

// add holds a received batch by key and returns what does not fit the hold (to go back to
// the queue). On an at-most-once queue nothing can go back: everything is held.
func (l *limiter) add(sub meta.Subscription, q queueInfo, batch []engine.Received, receivedAt time.Time) (over []engine.Received) {
	l.mu.Lock()
	defer l.mu.Unlock()
	perKey := holdPerKey(sub)
	for _, m := range batch {
		key := m.Attributes[sub.FlowControl.KeyAttribute]
		ks := l.keys[key]
		if ks == nil {
			ks = &keyState{}
			l.keys[key] = ks
		}
		size := engine.PayloadBytes(m.Body, m.Attributes)
		hasBudget := ks.inFlight < sub.FlowControl.Parallelism
		fits := len(ks.held) < perKey && (hasBudget || (l.held < holdMessages && l.bytes+size <= holdBytes))
		if !fits && !q.eq.AtMostOnce {
			over = append(over, m)
			continue
		}
		ks.held = append(ks.held, heldMessage{m: m, receivedAt: receivedAt})
		l.held++
		l.bytes += size
	}
	l.signalLocked()
	return over
}

// next takes the next batch some key has budget for, or returns nil (then scheduling a wake
// for the soonest key waiting on tokens). onLimited is told of each key found waiting for
// tokens (the subscription's rate: key "" with sub true).
func (l *limiter) next(sub meta.Subscription, q queueInfo, now time.Time, onLimited func(key string, sub bool)) *keyBatch {
	l.mu.Lock()
	defer l.mu.Unlock()
	fc := sub.FlowControl
	l.subRate.set(sub.MaxMessagesPerSecond, sub.BatchSize, now)
	fifo := q.eq.Type == engine.FIFO
	soonest := time.Duration(-1)
	for key, ks := range l.keys {
		if len(ks.held) == 0 || ks.inFlight >= fc.Parallelism {
			if len(ks.held) == 0 && ks.inFlight == 0 && ks.rate.full(now) {
				delete(l.keys, key) // nothing to remember
			}
			continue
		}
		idx := l.pick(ks, sub.BatchSize, fifo)
		if len(idx) == 0 {
			continue
		}
		ks.rate.set(fc.MessagesPerSecond, sub.BatchSize, now)
		wait, bySub := ks.rate.wait(now, len(idx)), false
		if wait == 0 {
			wait, bySub = l.subRate.wait(now, len(idx)), true
		}
		if wait > 0 {
			if soonest < 0 || wait < soonest {
				soonest = wait
			}
			if onLimited != nil {
				onLimited(key, bySub)
			}
			continue
		}
		ks.rate.take(now, len(idx))
		l.subRate.take(now, len(idx))
		return l.takeOut(key, ks, idx, fifo)
	}
	if soonest > 0 {
		l.wakeIn(soonest)
	}
	return nil
}

// pick chooses the indexes of up to n held messages of a key to push together. On a fifo
// queue a message goes only when no batch of its group is in flight and no earlier message
// of its group is held (by any key) outside this batch, so every group keeps its order.
func (l *limiter) pick(ks *keyState, n int, fifo bool) []int {
	var idx []int
	if !fifo {
		for i := range min(n, len(ks.held)) {
			idx = append(idx, i)
		}
		return idx
	}
	taken := map[string]bool{}
	for i, h := range ks.held {
		if len(idx) == n {
			break
		}
		g := h.m.GroupID
		if l.groups[g] > 0 {
			continue
		}
		if !taken[g] && l.earlierHeld(g, h.m.SequenceNumber) {
			continue
		}
		taken[g] = true
		idx = append(idx, i)
	}
	return idx
}

// earlierHeld reports whether a message of group g older than seq is held. (Keys hold only
// what was received: the engine hands out a group's messages in order.)
func (l *limiter) earlierHeld(g string, seq uint64) bool {
	for _, ks := range l.keys {
		for _, h := range ks.held {
			if h.m.GroupID == g && h.m.SequenceNumber < seq {
				return true
			}
		}
	}
	return false
}

func (l *limiter) takeOut(key string, ks *keyState, idx []int, fifo bool) *keyBatch {
	b := &keyBatch{key: key, msgs: make([]engine.Received, 0, len(idx))}
	keep := ks.held[:0]
	j := 0
	for i, h := range ks.held {
		if j < len(idx) && idx[j] == i {
			j++
			b.msgs = append(b.msgs, h.m)
			if b.receivedAt.IsZero() || h.receivedAt.Before(b.receivedAt) {
				b.receivedAt = h.receivedAt
			}
			l.held--
			l.bytes -= engine.PayloadBytes(h.m.Body, h.m.Attributes)
			continue
		}
		keep = append(keep, h)
	}
	clear(ks.held[len(keep):])
	ks.held = keep
	ks.inFlight++
	if fifo {
		for g := range groupsOf(b.msgs) {
			l.groups[g]++
		}
	}
	return b
}

func groupsOf(msgs []engine.Received) map[string]bool {
	gs := map[string]bool{}
	for _, m := range msgs {
		gs[m.GroupID] = true
	}
	return gs
}

// done ends a key batch's push. When a fifo batch was not settled cleanly (some message goes
// back to the queue), the held messages of its groups are returned too (unsent, not
// counted: see worker.cancelHeld) — pushing them first would let them overtake the retry.
func (l *limiter) done(b *keyBatch, fifo, clean bool) (ret []engine.Received) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ks := l.keys[b.key]; ks != nil {
		ks.inFlight--
	}
	if fifo {
		gs := groupsOf(b.msgs)
		for g := range gs {
			if l.groups[g]--; l.groups[g] <= 0 {
				delete(l.groups, g)
			}
		}
		if !clean {
			ret = l.removeHeld(func(m engine.Received) bool { return gs[m.GroupID] })
		}
	}
	l.signalLocked()
	return ret
}

// removeHeld takes out every held message sel selects.
func (l *limiter) removeHeld(sel func(engine.Received) bool) (out []engine.Received) {
	for _, ks := range l.keys {
		keep := ks.held[:0]
		for _, h := range ks.held {
			if sel(h.m) {
				out = append(out, h.m)
				l.held--
				l.bytes -= engine.PayloadBytes(h.m.Body, h.m.Attributes)
				continue
			}
			keep = append(keep, h)
		}
		clear(ks.held[len(keep):])
		ks.held = keep
	}
	return out
}

// drain takes out every held message (the worker stops, or flow control was turned off).
func (l *limiter) drain() []engine.Received {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == 0 {
		return nil
	}
	return l.removeHeld(func(engine.Received) bool { return true })
}

// expiring returns the held messages whose deadline comes within need of now (to extend).
func (l *limiter) expiring(now time.Time, need time.Duration) []engine.Received {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []engine.Received
	for _, ks := range l.keys {
		for _, h := range ks.held {
			if !h.m.VisibilityDeadline.IsZero() && h.m.VisibilityDeadline.Sub(now) < need {
				out = append(out, h.m)
			}
		}
	}
	return out
}

// extended records new deadlines of held messages, and drops those whose extension failed
// (their delivery went stale: the message was received again elsewhere).
func (l *limiter) extended(deadline time.Time, ok, stale map[engineDeliveryKey]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ks := range l.keys {
		keep := ks.held[:0]
		for _, h := range ks.held {
			k := deliveryKey(h.m.Delivery)
			if stale[k] {
				l.held--
				l.bytes -= engine.PayloadBytes(h.m.Body, h.m.Attributes)
				continue
			}
			if ok[k] {
				h.m.VisibilityDeadline = deadline
			}
			keep = append(keep, h)
		}
		clear(ks.held[len(keep):])
		ks.held = keep
	}
}

type engineDeliveryKey struct {
	id      [16]byte
	attempt uint32
}

func deliveryKey(d engine.Delivery) engineDeliveryKey {
	return engineDeliveryKey{id: d.MessageID, attempt: d.Attempt}
}

// keyedRound is one round of a receive loop under flowControl: push what has budget, keep
// the held messages' deadlines ahead, receive more (returning early when a held message may
// go), and hold what was received.
func (w *worker) keyedRound(sub meta.Subscription, q queueInfo, watch, changed <-chan struct{}) {
	l := w.limits
	w.dispatchKeyed(sub, q)
	w.renewHeld(sub, q)
	wake := l.wakeCh()
	if w.flow.full() {
		// Every batch slot is out: nothing received now could be pushed before one returns,
		// and receiving would only fill the hold (and push the excess back, counted).
		w.pause(wake, changed, w.p.cfg.IdlePoll)
		return
	}
	batch, receivedAt := w.collect(sub, q, watch, changed, wake)
	if len(batch) == 0 {
		return
	}
	if w.ctx.Err() != nil {
		w.giveBack(q, batch)
		return
	}
	over := l.add(sub, q, batch, receivedAt)
	w.dispatchKeyed(sub, q)
	if len(over) > 0 {
		w.returnLater(q, over, overflowDelay)
		// A key outgrew its hold: give its pushes a moment before receiving again, so the
		// queue's head is not churned through (each return counts a delivery).
		w.pause(l.wakeCh(), changed, overflowDelay)
	}
}

// pause waits for a wake-up, a change, the worker's stop or d.
func (w *worker) pause(wake, changed <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-wake:
	case <-changed:
	case <-w.ctx.Done():
	case <-t.C:
	}
}

// dispatchKeyed starts a push for every key batch with budget, while the subscription has
// batches in flight to spare.
func (w *worker) dispatchKeyed(sub meta.Subscription, q queueInfo) {
	l := w.limits
	fifo := q.eq.Type == engine.FIFO
	onLimited := func(key string, bySub bool) {
		if w.p.cfg.OnRateLimited != nil {
			w.p.cfg.OnRateLimited(w.qid, key, bySub)
		}
	}
	for w.ctx.Err() == nil {
		if !w.flow.tryAcquire() {
			return // a push settling wakes the round (flow and limiter both)
		}
		b := l.next(sub, q, w.p.cfg.Clock.Now(), onLimited)
		if b == nil {
			w.flow.done(flowNone)
			return
		}
		sl, err := w.p.shares.claim(w.ctx, w.qid)
		if err != nil {
			w.flow.done(flowNone)
			w.cancelHeld(q, b.msgs)
			l.done(b, fifo, true)
			return
		}
		w.inFlight.Add(1)
		go w.pushKeyed(sl, sub, q, b, fifo)
	}
}

// pushKeyed pushes one key batch, first extending the deadlines of messages held too long
// to leave the push its whole timeout.
func (w *worker) pushKeyed(sl *slot, sub meta.Subscription, q queueInfo, b *keyBatch, fifo bool) {
	defer w.inFlight.Done()
	res, clean := flowNone, false
	var a *attempt
	if batch := w.freshen(sub, q, b.msgs); len(batch) > 0 {
		res, a = w.deliver(sl, q, batch, b.receivedAt)
		clean = a != nil && (a.a.Outcome == meta.AttemptAcknowledged || a.a.Outcome == meta.AttemptDeferred)
	}
	w.settling <- struct{}{}
	w.p.shares.release(sl)
	w.flow.done(res)
	w.finish(a)
	<-w.settling
	if ret := w.limits.done(b, fifo, clean); len(ret) > 0 {
		w.cancelHeld(q, ret)
	}
}

// pushVisibility is the in-flight time a push receives its messages for.
func pushVisibility(sub meta.Subscription, q queueInfo) time.Duration {
	timeout := time.Duration(sub.TimeoutSeconds) * time.Second
	return max(q.eq.VisibilityTimeout, timeout+DeadlineMargin) + time.Duration(sub.BatchWindowMs)*time.Millisecond
}

// freshen extends the deadline of the messages of a held batch that no longer leave a push
// its timeout, and leaves out the ones that went stale.
func (w *worker) freshen(sub meta.Subscription, q queueInfo, msgs []engine.Received) []engine.Received {
	if q.eq.AtMostOnce {
		return msgs
	}
	now := w.p.cfg.Clock.Now()
	need := time.Duration(sub.TimeoutSeconds)*time.Second + w.p.cfg.SendMargin + DeadlineMargin
	var cs []engine.VisibilityChange
	var at []int
	for i, m := range msgs {
		if m.VisibilityDeadline.Sub(now) < need {
			cs = append(cs, engine.VisibilityChange{Delivery: m.Delivery, Visibility: pushVisibility(sub, q)})
			at = append(at, i)
		}
	}
	if len(cs) == 0 {
		return msgs
	}
	ctx, cancel := context.WithTimeout(w.p.ioCtx, 10*time.Second)
	defer cancel()
	errs, err := w.p.cfg.Engine.ChangeVisibility(ctx, q.eq, cs)
	if err != nil {
		return msgs // deliver's own check gives back what is too late
	}
	drop := map[int]bool{}
	for j, e := range errs {
		if e != nil {
			drop[at[j]] = true
		} else {
			msgs[at[j]].VisibilityDeadline = now.Add(cs[j].Visibility)
		}
	}
	out := msgs[:0]
	for i, m := range msgs {
		if !drop[i] {
			out = append(out, m)
		}
	}
	return out
}

// renewHeld keeps held messages in flight: those within half a push visibility of their
// deadline get a new one.
func (w *worker) renewHeld(sub meta.Subscription, q queueInfo) {
	if q.eq.AtMostOnce {
		return
	}
	vis := pushVisibility(sub, q)
	now := w.p.cfg.Clock.Now()
	due := w.limits.expiring(now, vis/2)
	if len(due) == 0 {
		return
	}
	cs := make([]engine.VisibilityChange, len(due))
	for i, m := range due {
		cs[i] = engine.VisibilityChange{Delivery: m.Delivery, Visibility: vis}
	}
	ctx, cancel := context.WithTimeout(w.p.ioCtx, 10*time.Second)
	defer cancel()
	errs, err := w.p.cfg.Engine.ChangeVisibility(ctx, q.eq, cs)
	if err != nil {
		return
	}
	ok, stale := map[engineDeliveryKey]bool{}, map[engineDeliveryKey]bool{}
	for i, e := range errs {
		if e == nil {
			ok[deliveryKey(due[i].Delivery)] = true
		} else {
			stale[deliveryKey(due[i].Delivery)] = true
		}
	}
	w.limits.extended(now.Add(vis), ok, stale)
}

// cancelHeld returns held messages that were never pushed without counting their delivery
// (the cancel of docs/delivery-options.md#cancel, bounded by the queue's maxCancels).
func (w *worker) cancelHeld(q queueInfo, msgs []engine.Received) {
	if q.eq.AtMostOnce || len(msgs) == 0 {
		return
	}
	ds := make([]engine.Delivery, len(msgs))
	for i, m := range msgs {
		ds[i] = m.Delivery
	}
	ctx, cancel := context.WithTimeout(w.p.ioCtx, 10*time.Second)
	defer cancel()
	if _, err := w.p.cfg.Engine.Cancel(ctx, q.eq, ds); err != nil && ctx.Err() == nil {
		w.p.log.Warn("returning held messages failed; they return at their deadline", "queue", w.qid.String(), "err", err)
	}
	w.p.m.messages.WithLabelValues(mReleased).Add(float64(len(msgs)))
}

// returnLater returns messages beyond the hold to the queue for d (this counts as a delivery).
func (w *worker) returnLater(q queueInfo, msgs []engine.Received, d time.Duration) {
	cs := make([]engine.VisibilityChange, len(msgs))
	for i, m := range msgs {
		cs[i] = engine.VisibilityChange{Delivery: m.Delivery, Visibility: d}
	}
	ctx, cancel := context.WithTimeout(w.p.ioCtx, 10*time.Second)
	defer cancel()
	if _, err := w.p.cfg.Engine.ChangeVisibility(ctx, q.eq, cs); err != nil && ctx.Err() == nil {
		w.p.log.Warn("returning messages beyond the hold failed; they return at their deadline", "queue", w.qid.String(), "err", err)
	}
	w.p.m.messages.WithLabelValues(mReleased).Add(float64(len(msgs)))
	if w.p.cfg.OnGiveBack != nil {
		w.p.cfg.OnGiveBack(w.qid, len(msgs))
	}
}
