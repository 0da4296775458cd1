package fanout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/service"
)

// copyConcurrency bounds the bindings one round copies for at once: a topic with many
// bindings reaches all its queues in a few storage round trips, not one per binding.
const copyConcurrency = 8

// errFilter stalls a binding whose stored filter cannot be read: copying everything would
// put unselected messages into its queue, and skipping would lose selected ones.
var errFilter = errors.New("fanout: the binding's filter cannot be read")

// round is one step of a held topic: it reads the log after the smallest binding cursor,
// then the bindings again (their filters, as they are now, judge the entries read: a filter
// replaced before a publish was answered judges that publish), copies one batch per binding
// and records every binding's progress. caughtUp: the log holds nothing after the smallest
// cursor of the bindings taking part (a binding waiting out a failure does not: retry.go).
// An error (of the topic's storage) leaves every binding where it was; a binding whose copy
// failed stays where it was and waits.
func (h *holder) round(ctx context.Context) (caughtUp bool, err error) {
	r := h.r
	before, err := r.Engine.Bindings(ctx, h.topic)
	if err != nil {
		return false, h.fail("bindings", err)
	}
	now := time.Now() // for the bindings' backoff (a schedule, not a record)
	all := len(before)
	if before = h.ready(before, now); len(before) == 0 {
		if all == 0 {
			r.setLag(h.id, time.Time{})
		}
		return true, nil // the lag stays what the waiting bindings left it
	}
	from := minSequence(before, 0) + 1
	entries, err := r.Engine.ReadLog(ctx, h.topic, from, r.ReadLimit)
	if err != nil {
		return false, h.fail("read", err)
	}
	if len(entries) == 0 {
		if len(before) == all {
			r.setLag(h.id, time.Time{})
		}
		return true, nil
	}
	if len(before) == all || from <= h.lagFrom {
		r.setLag(h.id, entries[0].PublishedAt)
		h.lagFrom = from
	}
	after, err := r.Engine.Bindings(ctx, h.topic)
	if err != nil {
		return false, h.fail("bindings", err)
	}
	after = h.ready(h.dropOrphans(ctx, after), now)
	var maxBytes int64
	if r.Limits != nil {
		if maxBytes, err = r.Limits.MaxStoredBytes(ctx, h.topic.Project); err != nil {
			return false, h.fail("limits", err)
		}
	}
	advances := h.copyAll(ctx, after, from, entries, maxBytes)
	more, err := h.copyAhead(ctx, after, entries[len(entries)-1].Sequence, maxBytes, now)
	if err != nil {
		return false, err // what was copied is stored once when copied again (the marks)
	}
	advances = append(advances, more...)
	if r.AfterCopy != nil {
		r.AfterCopy(h.id)
	}
	if ctx.Err() != nil {
		return false, ctx.Err() // ending: what was copied is recorded by the next holder's Copy
	}
	if len(advances) > 0 {
		if aerr := r.Engine.AdvanceBindings(ctx, h.topic, advances); aerr != nil {
			return false, h.fail("advance", aerr)
		}
	}
	return false, nil
}

// maxAheadReads bounds the further log reads of one round for the bindings ahead of its
// first read.
const maxAheadReads = 4

// copyAhead copies for the bindings whose cursor is at or past last, the last entry the
// round's first read returned: that read starts at the smallest cursor, so without this a
// binding copying a long log (created from=earliest) would hold every other binding back
// until it caught up. Each further read starts at the smallest cursor of the bindings still
// ahead, and the bindings are read again after it (their filters judge what it read).
func (h *holder) copyAhead(ctx context.Context, bs []engine.Binding, last uint64, maxBytes int64, now time.Time) ([]engine.Advance, error) {
	var advances []engine.Advance
	for range maxAheadReads {
		ahead := map[ids.ID]bool{}
		var cursors []engine.Binding
		for _, b := range bs {
			if b.Sequence >= last {
				ahead[b.ID] = true
				cursors = append(cursors, b)
			}
		}
		if len(ahead) == 0 || ctx.Err() != nil {
			return advances, nil //nolint:nilerr // reading ahead is extra: a cancelled round keeps what it copied, the holder sees ctx itself
		}
		from := minSequence(cursors, 0) + 1
		entries, err := h.r.Engine.ReadLog(ctx, h.topic, from, h.r.ReadLimit)
		if err != nil || len(entries) == 0 {
			return advances, h.failed0("read", err)
		}
		cur, err := h.r.Engine.Bindings(ctx, h.topic)
		if err != nil {
			return advances, h.fail("bindings", err)
		}
		bs = bs[:0:0]
		for _, b := range h.ready(cur, now) {
			if ahead[b.ID] {
				bs = append(bs, b)
			}
		}
		advances = append(advances, h.copyAll(ctx, bs, from, entries, maxBytes)...)
		last = entries[len(entries)-1].Sequence
	}
	return advances, nil
}

// failed0 is fail for an error that may be nil.
func (h *holder) failed0(op string, err error) error {
	if err == nil {
		return nil
	}
	return h.fail(op, err)
}

// fail counts and logs a storage error of op and returns it.
func (h *holder) fail(op string, err error) error {
	if !errors.Is(err, context.Canceled) {
		h.r.metrics.errors.WithLabelValues(op).Inc()
		h.r.Log.Warn("fanout: "+op+" failed", "topic", h.id.String(), "error", err)
	}
	return err
}

// copyAll copies one batch for every binding the entries concern and answers the advances of
// the bindings whose batch was stored (or had nothing to store); a binding that failed waits
// (retry.go).
func (h *holder) copyAll(ctx context.Context, bs []engine.Binding, from uint64, entries []engine.LogEntry, maxBytes int64) []engine.Advance {
	last := entries[len(entries)-1].Sequence
	type result struct {
		adv engine.Advance
		ok  bool
		err error
	}
	res := make([]result, len(bs))
	sem := make(chan struct{}, copyConcurrency)
	var wg sync.WaitGroup
	for i, b := range bs {
		// A binding whose cursor is before from (bound meanwhile, further back) was not read
		// for: the next round starts at its cursor.
		if b.Sequence >= last || b.Sequence+1 < from {
			continue
		}
		f, ok := h.filter(b.Filter)
		if !ok {
			res[i].err = fmt.Errorf("%w: binding %s", errFilter, b.ID)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res[i].adv, res[i].ok, res[i].err = h.copyBinding(ctx, b, f, entries, maxBytes)
		}()
	}
	wg.Wait()
	var advances []engine.Advance
	now := time.Now()
	for i, x := range res {
		if x.ok {
			advances = append(advances, x.adv)
			delete(h.retries, bs[i].ID)
		}
		if x.err != nil && ctx.Err() == nil {
			h.failed(bs[i].ID, now)
		}
	}
	return advances
}

// copyBinding copies b's batch of entries into its queue. ok: the batch is stored (or
// refused message by message, or empty) and adv records it. A binding whose queue is gone is
// unbound (ok false: there is nothing to advance).
func (h *holder) copyBinding(ctx context.Context, b engine.Binding, f *filter.Filter, entries []engine.LogEntry, maxBytes int64) (engine.Advance, bool, error) {
	r := h.r
	batch, through := selectBatch(entries, b.Sequence, f, h.topic.Type == engine.FIFO)
	adv := engine.Advance{Binding: b.ID, Through: through}
	if len(batch) == 0 {
		return adv, true, nil
	}
	q, err := r.Queues.GetQueueByID(ctx, b.Queue)
	if errors.Is(err, meta.ErrNotFound) {
		h.unbind(ctx, b, "its queue was deleted")
		return adv, false, nil
	}
	if err != nil {
		return adv, false, h.fail("queue", err)
	}
	eq, err := meta.EngineQueue(ctx, r.Queues, q)
	if err != nil {
		return adv, false, h.fail("queue", err)
	}
	eq.MaxStoredBytes = maxBytes
	errs, err := copyWithin(ctx, r.Engine, eq, engine.CopyBatch{Topic: h.id, Binding: b.ID, Messages: batch})
	if err != nil {
		return adv, false, h.fail("copy", err)
	}
	var sent meta.Counters
	now := r.Clock.Now()
	for i, m := range batch {
		if i < len(errs) && errs[i] != nil {
			adv.Failed++
			adv.LastError = reason(errs[i])
			continue
		}
		adv.Copied++
		sent.MessagesSent++
		sent.BytesIn += engine.PayloadBytes(m.Message.Body, m.Message.Attributes)
		r.metrics.delay.Observe(max(now.Sub(entries[indexOf(entries, m.Sequence)].PublishedAt).Seconds(), 0))
	}
	r.metrics.copies.Add(float64(adv.Copied))
	r.metrics.refused.Add(float64(adv.Failed))
	if r.Meter != nil && !sent.IsZero() {
		r.Meter.Add(eq.Project, sent)
	}
	return adv, true, nil
}

// copyWithin copies the messages of b that fit q's maxMessageBytes (a topic takes messages up
// to engine.MaxMessageBytes; its queues may take less, docs/topics.md). The others are
// refused with engine.Queue.CheckSize's *engine.TooLarge, which the binding records
// (reason), and cost no store round trip. errs lines up with b.Messages.
func copyWithin(ctx context.Context, e engine.Topics, q engine.Queue, b engine.CopyBatch) ([]error, error) {
	errs := make([]error, len(b.Messages))
	keep := make([]engine.CopyMessage, 0, len(b.Messages))
	at := make([]int, 0, len(b.Messages))
	for i, m := range b.Messages {
		if err := q.CheckSize(m.Message.Body, m.Message.Attributes); err != nil {
			errs[i] = err
			continue
		}
		keep, at = append(keep, m), append(at, i)
	}
	if len(keep) == len(b.Messages) {
		return e.Copy(ctx, q, b)
	}
	if len(keep) == 0 {
		return errs, nil
	}
	b.Messages = keep
	got, err := e.Copy(ctx, q, b)
	if err != nil {
		return nil, err
	}
	for j, err := range got {
		errs[at[j]] = err
	}
	return errs, nil
}

// selectBatch picks the entries after cursor that f selects, at most MaxBatch of them and
// MaxBatchBytes (at least one). through is the last sequence the batch accounts for: the
// last entry read, or the one before the first selected entry left for the next batch (the
// entries filtered out before it are handled too).
func selectBatch(entries []engine.LogEntry, cursor uint64, f *filter.Filter, fifo bool) (batch []engine.CopyMessage, through uint64) {
	var size int64
	for _, e := range entries {
		if e.Sequence <= cursor || !f.Match(e.Attributes) {
			continue
		}
		n := engine.PayloadBytes(e.Body, e.Attributes)
		if len(batch) == MaxBatch || (len(batch) > 0 && size+n > MaxBatchBytes) {
			return batch, e.Sequence - 1
		}
		batch = append(batch, copyOf(e, fifo))
		size += n
	}
	return batch, entries[len(entries)-1].Sequence
}

// copyOf is entry e as a queue stores it: no conflation key (a keyed publish sets the topic's
// state, not the queue's), and on fifo its group and a dedup id (the published one, else the
// message id: a copy stored again is then a duplicate of itself).
func copyOf(e engine.LogEntry, fifo bool) engine.CopyMessage {
	m := engine.Message{Body: e.Body, Attributes: e.Attributes}
	if fifo {
		m.GroupID, m.DedupID = e.GroupID, e.DedupID
		if m.DedupID == "" {
			m.DedupID = e.MessageID.String()
		}
	}
	return engine.CopyMessage{Sequence: e.Sequence, Message: m, ID: e.MessageID}
}

// indexOf finds the entry of sequence seq (entries ascend).
func indexOf(entries []engine.LogEntry, seq uint64) int {
	lo, hi := 0, len(entries)
	for lo < hi {
		mid := (lo + hi) / 2
		if entries[mid].Sequence < seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return min(lo, len(entries)-1)
}

// filter parses a binding's filter once per hold ("" or null: none). false: it cannot be
// read.
func (h *holder) filter(raw string) (*filter.Filter, bool) {
	if raw == "" || raw == "null" {
		return nil, true
	}
	if f, ok := h.filters[raw]; ok {
		return f, f != nil
	}
	f, err := filter.Parse([]byte(raw))
	if err != nil {
		h.r.metrics.errors.WithLabelValues("filter").Inc()
		h.r.Log.Error("fanout: a binding's filter cannot be read; the binding waits", "topic", h.id.String(), "error", err)
		f = nil
	}
	if len(h.filters) > 2*meta.MaxBindingsPerTopic {
		clear(h.filters)
	}
	h.filters[raw] = f
	return f, f != nil
}

// reason is what a binding records of a refused copy: the client's words for an engine's
// refusal (pkg/service writes them once, for the doors and for these records).
func reason(err error) string {
	if ae := service.Refusal(err); ae != nil {
		return ae.Message
	}
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	return err.Error()
}
