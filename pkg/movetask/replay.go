package movetask

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// Replays (docs/topics.md#replay) are move tasks whose source is a topic's log: the runner reads
// the range FromSequence..ToSequence in batches (engine.Topics.ReadLog: at most MaxReplayBatch
// entries and engine.MaxLogReadBytes), sends the entries the filter selects into the destination as
// new messages carrying engine.ReplayOfAttribute, and checkpoints the next sequence with the
// counts after each batch. A crash between a batch's send and its checkpoint sends that
// batch again (new message ids; on a fifo queue the dedup id, derived from the task and the
// sequence, makes the second send a duplicate within the dedup window): at most the batch in
// transit is duplicated, nothing is lost.

// MaxReplayBatch bounds the entries one replay batch sends (a batch also stops at
// engine.MaxLogReadBytes).
const MaxReplayBatch = 100

// sendChunk is how many messages one engine Send of a replay carries (a send's bound).
const sendChunk = 10

// ReplaySource is what a Runner needs to run replays: the replica's topic engine and store.
type ReplaySource struct {
	Engine engine.Topics
	Topics interface {
		GetTopicByID(ctx context.Context, topicID ids.ID) (meta.Topic, error)
	}
	// Limits reads a project's maxStoredBytes, which bounds replayed copies as sends (nil:
	// no bound).
	Limits interface {
		MaxStoredBytes(ctx context.Context, project ids.ID) (int64, error)
	}
	// Meter counts each stored copy as a send: one messagesSent, its bytes in bytesIn (nil:
	// not metered).
	Meter interface {
		Add(project ids.ID, c meta.Counters)
	}
}

// ForStores is the ReplaySource of a replica whose engine keeps topics and whose store keeps
// them (nil when either does not: replays then fail as not served).
func ForStores(eng, store any) *ReplaySource {
	te, ok := eng.(engine.Topics)
	if !ok {
		return nil
	}
	ts, ok := store.(meta.TopicStore)
	if !ok {
		return nil
	}
	return &ReplaySource{Engine: te, Topics: ts}
}

// EngineTopic is what the engine needs of a topic to read its log.
func EngineTopic(t meta.Topic) engine.Topic {
	return engine.Topic{ID: t.ID, Project: t.ProjectID, Type: engine.Type(t.Type),
		Retention: time.Duration(t.RetentionSeconds) * time.Second}
}

// DecodeReplayFilter reads a replay's stored filter (a receive's filter object; "" for none).
func DecodeReplayFilter(s string) (*filter.Filter, error) {
	if s == "" {
		return nil, nil
	}
	f, aerr := filter.Parse([]byte(s))
	if aerr != nil {
		return nil, aerr
	}
	return f, nil
}

// ReplayNext is where a replay's scan of the log continues: the sequence its cursor names, or
// its FromSequence.
func ReplayNext(t meta.MoveTask) uint64 {
	if n, err := strconv.ParseUint(t.Cursor, 10, 64); err == nil && n > 0 {
		return n
	}
	return t.FromSequence
}

// CountReplayBatch counts, sending nothing, the entries of replay t's range that its filter
// selects in one log read from ReplayNext(t) (at most engine.MaxLogRead entries). done: the
// range is counted whole; else the task's Cursor goes on from next.
func CountReplayBatch(ctx context.Context, te engine.Topics, et engine.Topic, t meta.MoveTask, f *filter.Filter) (matched int64, next uint64, done bool, err error) {
	from := ReplayNext(t)
	if from > t.ToSequence {
		return 0, from, true, nil
	}
	es, err := te.ReadLog(ctx, et, from, engine.MaxLogRead)
	if err != nil {
		return 0, from, false, err
	}
	es = within(es, t.ToSequence)
	if len(es) == 0 {
		return 0, from, true, nil
	}
	for _, e := range es {
		if f.Match(e.Attributes) {
			matched++
		}
	}
	last := es[len(es)-1].Sequence
	return matched, last + 1, last >= t.ToSequence, nil
}

// within is es up to sequence to.
func within(es []engine.LogEntry, to uint64) []engine.LogEntry {
	for i, e := range es {
		if e.Sequence > to {
			return es[:i]
		}
	}
	return es
}

// replayRun is one run of a replay: its topic, filter and destination.
type replayRun struct {
	topic engine.Topic
	flt   *filter.Filter
	dest  meta.Queue
}

// runReplay runs replay t to its end, or until ctx ends or the task is lost.
func (r *Runner) runReplay(ctx context.Context, t meta.MoveTask) {
	if r.Replays == nil {
		r.finish(ctx, t, meta.MoveFailed, "replays are not served by this deployment")
		return
	}
	tp, err := r.Replays.Topics.GetTopicByID(ctx, t.TopicID)
	if errors.Is(err, meta.ErrNotFound) {
		r.finish(ctx, t, meta.MoveFailed, "the topic was deleted")
		return
	}
	if err != nil {
		return // the lease lapses; a later scan retries
	}
	f, err := DecodeReplayFilter(t.Filter)
	if err != nil {
		r.finish(ctx, t, meta.MoveFailed, "the task's stored filter is not readable")
		return
	}
	run := &replayRun{topic: EngineTopic(tp), flt: f}
	if t.Counting {
		var ok bool
		if t, ok = r.replayPass(ctx, t, run, true); !ok {
			return
		}
		t.Counting = false
		if t.DryRun {
			r.finish(ctx, t, meta.MoveCompleted, "")
			return
		}
		t.Failed, t.Cursor = 0, ""
		if t, err = r.checkpoint(ctx, t); err != nil {
			return
		}
	}
	if t, ok := r.replayPass(ctx, t, run, false); ok {
		r.finish(ctx, t, meta.MoveCompleted, "")
	}
}

// replayPass reads the range from the task's cursor to ToSequence batch by batch at the
// task's rate, checkpointing after each batch: counting (toMove) without sending, or sending.
// ok: the range is done; otherwise the task was finished as failed, or lost, or ctx ended.
func (r *Runner) replayPass(ctx context.Context, t meta.MoveTask, run *replayRun, counting bool) (_ meta.MoveTask, ok bool) {
	rate, limit := t.MaxPerSecond, min(MaxReplayBatch, max(1, t.MaxPerSecond/10))
	if counting {
		rate, limit = rate*countSpeedup, engine.MaxLogRead
	}
	pace := newPacer(r.Clock.Now(), rate)
	errs := 0
	for ctx.Err() == nil {
		from := ReplayNext(t)
		if from > t.ToSequence {
			return t, true
		}
		n, last, err := r.replayBatch(ctx, &t, run, from, limit, counting)
		if why := (&replayGone{}); errors.As(err, &why) {
			r.finish(ctx, t, meta.MoveFailed, why.why)
			return t, false
		}
		if err != nil {
			if errs++; errs >= maxErrors {
				r.finish(ctx, t, meta.MoveFailed, "storage kept failing")
				return t, false
			}
			if !sleep(ctx, time.Duration(errs)*100*time.Millisecond) {
				return t, false
			}
			if t, err = r.checkpoint(ctx, t); err != nil {
				return t, false
			}
			continue
		}
		errs = 0
		if last == 0 || last >= t.ToSequence { // the log holds nothing more of the range
			t.Cursor = strconv.FormatUint(t.ToSequence+1, 10)
			return t, true
		}
		t.Cursor = strconv.FormatUint(last+1, 10)
		if t, err = r.checkpoint(ctx, t); err != nil {
			return t, false
		}
		if d := pace.wait(r.Clock.Now(), n); d > 0 {
			if !sleep(ctx, d) || r.stopped(ctx, t) {
				return t, false
			}
		}
	}
	return t, false
}

// replayGone ends a replay whose topic or destination was deleted.
type replayGone struct{ why string }

func (g *replayGone) Error() string { return g.why }

// replayBatch reads one batch of the log from from and counts or sends what the filter
// selects, adding to t's counts. n is how many entries it selected, last the last sequence
// it read (0: none left in the log).
func (r *Runner) replayBatch(ctx context.Context, t *meta.MoveTask, run *replayRun, from uint64, limit int, counting bool) (n int, last uint64, err error) {
	if _, err := r.Replays.Topics.GetTopicByID(ctx, t.TopicID); errors.Is(err, meta.ErrNotFound) {
		return 0, 0, &replayGone{"the topic was deleted while the task ran"}
	} else if err != nil {
		return 0, 0, err
	}
	if !counting {
		d, err := r.Queues.GetQueueByID(ctx, t.Destination)
		if errors.Is(err, meta.ErrNotFound) {
			return 0, 0, &replayGone{"the destination queue was deleted while the task ran"}
		}
		if err != nil {
			return 0, 0, err
		}
		run.dest = d
	}
	es, err := r.Replays.Engine.ReadLog(ctx, run.topic, from, limit)
	if err != nil {
		return 0, 0, err
	}
	es = within(es, t.ToSequence)
	if len(es) == 0 {
		return 0, 0, nil
	}
	var picked []engine.LogEntry
	for _, e := range es {
		if run.flt.Match(e.Attributes) {
			picked = append(picked, e)
		}
	}
	last = es[len(es)-1].Sequence
	if counting {
		t.ToMove += int64(len(picked))
		if r.Budget != nil && !r.Budget.Charge(ctx, t.ProjectID, 1, 0) {
			return 0, 0, ctx.Err()
		}
		return len(picked), last, nil
	}
	stored, failed, err := r.sendReplayed(ctx, *t, run, picked)
	if err != nil {
		return 0, 0, err
	}
	t.Moved, t.Failed = t.Moved+stored, t.Failed+failed
	return len(picked), last, nil
}

// sendReplayed sends the picked entries into the destination as new messages, charging the
// project's budgets and metering the stored ones as sends. A message the queue refuses (its
// project's byte quota) counts as failed; an error of a whole send fails the batch, which is
// sent again (on a fifo queue the dedup ids make the resend of what was stored duplicates).
func (r *Runner) sendReplayed(ctx context.Context, t meta.MoveTask, run *replayRun, picked []engine.LogEntry) (stored, failed int64, err error) {
	msgs := make([]engine.Message, len(picked))
	var size int64
	for i, e := range picked {
		m := engine.Message{Body: e.Body, Attributes: engine.WithReplayOf(e.Attributes, engine.ReplayOf{Topic: t.TopicID, Sequence: e.Sequence})}
		if run.dest.Type == string(engine.FIFO) {
			m.GroupID, m.DedupID = e.GroupID, "replay:"+t.ID.String()+":"+strconv.FormatUint(e.Sequence, 10)
		}
		msgs[i] = m
		size += engine.PayloadBytes(e.Body, e.Attributes)
	}
	if r.Budget != nil && !r.Budget.Charge(ctx, t.ProjectID, 1, size) {
		return 0, 0, errors.Join(errors.New("movetask: the project's budget was not charged"), ctx.Err())
	}
	eq, err := meta.EngineQueue(ctx, r.Queues, run.dest)
	if err != nil {
		return 0, 0, err
	}
	if r.Replays.Limits != nil {
		if eq.MaxStoredBytes, err = r.Replays.Limits.MaxStoredBytes(ctx, t.ProjectID); err != nil {
			return 0, 0, err
		}
	}
	// A message over the destination's maxMessageBytes (the topic takes up to the ceiling) is
	// refused, as a send of it would be.
	fits := msgs[:0:0]
	for _, m := range msgs {
		if eq.CheckSize(m.Body, m.Attributes) != nil {
			failed++
			continue
		}
		fits = append(fits, m)
	}
	msgs = fits
	var sent meta.Counters
	for start := 0; start < len(msgs); start += sendChunk {
		chunk := msgs[start:min(start+sendChunk, len(msgs))]
		res, err := r.Engine.Send(ctx, eq, chunk)
		if err != nil && !errors.Is(err, engine.ErrStoredBytesExceeded) {
			return 0, 0, err
		}
		for i := range chunk {
			if err != nil || (i < len(res) && res[i].Err != nil) {
				failed++
				continue
			}
			stored++
			sent.MessagesSent++
			sent.BytesIn += engine.PayloadBytes(chunk[i].Body, chunk[i].Attributes)
		}
	}
	if r.Replays.Meter != nil && !sent.IsZero() {
		r.Replays.Meter.Add(t.ProjectID, sent)
	}
	return stored, failed, nil
}
