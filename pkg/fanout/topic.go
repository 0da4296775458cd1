package fanout

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// holder is one held topic's state, owned by the goroutine that fans the topic out.
type holder struct {
	r       *Runner
	id      ids.ID
	topic   engine.Topic
	renewed time.Time
	// loaded is when the topic's settings were last read.
	loaded time.Time
	// orphansChecked is when the bindings were last compared with the metadata store.
	orphansChecked time.Time
	filters        map[string]*filter.Filter
	// retries are the bindings waiting out a failure (retry.go).
	retries map[ids.ID]retry
	// lagFrom is where the round that set the topic's lag read from: while bindings wait out
	// failures, only a round reading from as far back speaks for the whole topic.
	lagFrom uint64
}

// errLost ends a hold whose lease another replica has taken.
var errLost = errors.New("fanout: the topic's lease was lost")

// hold fans topic out while this replica holds its lease: a round after every publish
// (WatchTopic), until the topic has been caught up for IdleAfter; then it is idled and
// released. It answers whether the topic should be tried again at once (a publish came as
// it was let go).
func (r *Runner) hold(ctx context.Context, topic ids.ID) (again bool) {
	watch, cancel := r.Engine.WatchTopic(topic)
	defer cancel()
	h := &holder{r: r, id: topic, renewed: r.Clock.Now(), filters: map[string]*filter.Filter{},
		retries: map[ids.ID]retry{}}
	defer h.release()
	if err := h.load(ctx); err != nil {
		switch {
		case errors.Is(err, meta.ErrNotFound):
			// Deleted from the metadata but not (yet) from the engine: the API's delete was cut
			// short, or is under way. Nothing can be fanned out without its settings; look
			// again in a minute rather than every poll.
			r.mu.Lock()
			r.busy[topic] = r.Clock.Now().Add(orphanGrace)
			r.mu.Unlock()
		case ctx.Err() == nil:
			r.Log.Warn("fanout: reading a topic failed", "topic", topic.String(), "error", err)
		}
		return false
	}
	var quiet, backoff time.Duration
	for ctx.Err() == nil {
		if err := h.renew(ctx); err != nil {
			return false
		}
		caughtUp, err := h.round(ctx)
		h.maybeTrim(ctx) // after the round: a publish that woke this topic is not kept waiting
		switch {
		case err != nil:
			backoff = min(max(2*backoff, 50*time.Millisecond), maxBackoff)
			if !sleep(ctx, backoff) {
				return false
			}
			continue
		case !caughtUp:
			backoff, quiet = 0, 0
			continue
		}
		backoff = 0
		wait := min(r.IdleAfter-quiet, r.Lease/3)
		if next, ok := h.nextRetry(time.Now()); ok {
			wait = min(wait, max(next, time.Millisecond))
		}
		if waitFor(ctx, watch, wait) {
			quiet = 0
			continue
		}
		if quiet += wait; quiet >= r.IdleAfter {
			if h.idle(ctx) {
				return pending(watch)
			}
			quiet = 0
		}
	}
	return false
}

// load reads the topic's settings (its retention may change while it is held: maybeTrim
// reads them again).
func (h *holder) load(ctx context.Context) error {
	t, err := h.r.Topics.GetTopicByID(ctx, h.id)
	if err != nil {
		return err
	}
	h.topic = engine.Topic{ID: t.ID, Project: t.ProjectID, Type: engine.Type(t.Type),
		Retention: time.Duration(t.RetentionSeconds) * time.Second}
	h.loaded = h.r.Clock.Now()
	return nil
}

// renew renews the lease once a third of its ttl has passed since the last renewal;
// errLost when another replica holds it now. A renewal that fails on storage is retried at
// the next round: the lease is still ours until its ttl ends, and a Copy made after it ended
// is still stored once (the queue's high-water mark), so the worst is work done twice.
func (h *holder) renew(ctx context.Context) error {
	r := h.r
	now := r.Clock.Now()
	if now.Sub(h.renewed) < r.Lease/3 {
		return nil
	}
	ok, err := r.Engine.LeaseTopic(ctx, h.id, r.Owner, r.Lease)
	switch {
	case err != nil:
		r.metrics.errors.WithLabelValues("lease").Inc()
		if now.Sub(h.renewed) >= r.Lease {
			return errLost // it lapsed meanwhile: stop rather than race a new holder
		}
		return nil
	case !ok:
		r.metrics.leasesLost.Inc()
		r.Log.Info("fanout: topic lease lost", "topic", h.id.String())
		return errLost
	}
	h.renewed = now
	return nil
}

// maybeTrim trims the log unless this replica trimmed it within TrimEvery with a retention
// no shorter: the retention is read afresh at most once per Poll, so a shortened one (a PATCH)
// applies at the next round rather than a minute later.
func (h *holder) maybeTrim(ctx context.Context) {
	r := h.r
	now := r.Clock.Now()
	if now.Sub(h.loaded) >= r.Poll {
		if err := h.load(ctx); err != nil {
			return
		}
	}
	if !r.trimDue(h.id, now, h.topic.Retention) {
		return
	}
	if err := r.Engine.Trim(ctx, h.topic); err != nil && ctx.Err() == nil {
		r.metrics.errors.WithLabelValues("trim").Inc()
		r.Log.Warn("fanout: trimming a topic failed", "topic", h.id.String(), "error", err)
	}
}

// idle lets a caught-up topic go: trimmed once more, removed from ActiveTopics unless a
// publish came after the last sequence every binding has reached, with the time its oldest
// entry passes the retention as its wake time (nobody may publish to it again: the runner
// that takes it up then trims it). false: it is not caught up after all (a publish raced
// the wait), or storage failed.
func (h *holder) idle(ctx context.Context) bool {
	r := h.r
	r.mu.Lock()
	delete(r.dropped, h.id) // publishes seen so far are fanned out by the checks below
	r.mu.Unlock()
	b, err := r.Engine.Bounds(ctx, h.topic)
	if err != nil {
		return false
	}
	bs, err := r.Engine.Bindings(ctx, h.topic)
	if err != nil || !h.passTrimmed(ctx, bs, b) || minSequence(bs, b.Last) < b.Last {
		return false
	}
	h.maybeTrim(ctx)
	wake, err := h.wakeAt(ctx)
	if err != nil {
		r.metrics.errors.WithLabelValues("idle").Inc()
		return false
	}
	if err := r.Engine.IdleTopic(ctx, h.id, b.Last, wake); err != nil {
		r.metrics.errors.WithLabelValues("idle").Inc()
		return false
	}
	return true
}

// passTrimmed moves the cursors of bindings behind the log's first entry (bound from a
// sequence since trimmed) to just before it, raising bs's cursors alike: with the log empty
// after them, no round reads an entry that would move them, and the topic could never be let
// go. Entries before First are gone for good, so nothing is skipped. false: storage failed.
func (h *holder) passTrimmed(ctx context.Context, bs []engine.Binding, b engine.LogBounds) bool {
	var as []engine.Advance
	for i := range bs {
		if bs[i].Sequence+1 < b.First {
			as = append(as, engine.Advance{Binding: bs[i].ID, Through: b.First - 1})
			bs[i].Sequence = b.First - 1
		}
	}
	if len(as) == 0 {
		return true
	}
	if err := h.r.Engine.AdvanceBindings(ctx, h.topic, as); err != nil {
		_ = h.fail("advance", err)
		return false
	}
	return true
}

// wakeAt is when a topic let go now must be taken up again to be trimmed: when its oldest
// entry passes the retention (at once at retention 0, where a caught-up topic's entries all
// go), but not within TrimEvery of this replica's last trim of it (which the new holder, if
// it is this replica, would skip). Zero when the log is empty: only a publish, which lists
// the topic, adds to it.
func (h *holder) wakeAt(ctx context.Context) (time.Time, error) {
	r := h.r
	b, err := r.Engine.Bounds(ctx, h.topic)
	if err != nil || b.First > b.Last {
		return time.Time{}, err
	}
	at := r.Clock.Now()
	if h.topic.Retention > 0 {
		es, err := r.Engine.ReadLog(ctx, h.topic, b.First, 1)
		if err != nil || len(es) == 0 {
			return time.Time{}, err
		}
		at = es[0].PublishedAt.Add(h.topic.Retention)
	}
	if last, ok := r.lastTrim(h.id); ok && at.Before(last.Add(r.TrimEvery)) {
		at = last.Add(r.TrimEvery)
	}
	return at, nil
}

// release gives the lease up (with a context of its own: the runner's may have ended) so
// another replica can take the topic at once.
func (h *holder) release() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = h.r.Engine.ReleaseTopic(ctx, h.id, h.r.Owner)
}

// trimDue records that topic is trimmed at now with retention unless it was within
// TrimEvery (by this or an earlier hold of this replica) with a retention no shorter: holds
// of a topic published to in bursts come and go every few seconds, and each need not trim.
func (r *Runner) trimDue(topic ids.ID, now time.Time, retention time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trims == nil {
		r.trims = map[ids.ID]trimmed{}
	}
	if t, ok := r.trims[topic]; ok && now.Sub(t.at) < r.TrimEvery && retention >= t.retention {
		return false
	}
	r.trims[topic] = trimmed{at: now, retention: retention}
	if len(r.trims) >= 2*max(r.trimsSwept, 64) { // forget old entries in O(1) per entry
		for k, t := range r.trims {
			if now.Sub(t.at) >= r.TrimEvery {
				delete(r.trims, k)
			}
		}
		r.trimsSwept = len(r.trims)
	}
	return true
}

// lastTrim is when this replica last trimmed topic, if it did within TrimEvery.
func (r *Runner) lastTrim(topic ids.ID) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.trims[topic]
	return t.at, ok
}

// minSequence is the smallest binding cursor (none: def).
func minSequence(bs []engine.Binding, def uint64) uint64 {
	if len(bs) == 0 {
		return def
	}
	m := uint64(math.MaxUint64)
	for _, b := range bs {
		m = min(m, b.Sequence)
	}
	return m
}

// waitFor waits for a signal on watch (true) or for d to pass or ctx to end (false).
func waitFor(ctx context.Context, watch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-watch:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// pending reports whether watch has a signal waiting.
func pending(watch <-chan struct{}) bool {
	select {
	case <-watch:
		return true
	default:
		return false
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
