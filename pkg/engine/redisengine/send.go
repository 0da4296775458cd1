package redisengine

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// wakeDigests are the attribute digests a send of msgs names in its wake-up, so that only
// receives whose filter could match one of them wake (filter.WakeDigests).
func wakeDigests(msgs []engine.Message) []uint64 {
	if !slices.ContainsFunc(msgs, func(m engine.Message) bool { return len(m.Attributes) > 0 }) {
		return []uint64{} // the common send: nothing to hash, nothing to allocate
	}
	attrs := make([]map[string]string, len(msgs))
	for i, m := range msgs {
		attrs[i] = m.Attributes
	}
	return filter.WakeDigests(attrs...)
}

// Send stores the messages in one partition (random among the queue's partitions) with one
// script call (all or nothing: SendResult.Err is never set), and adds a partition when this
// one's send rate passed the threshold. Concurrent sends to one partition share the script
// call (lanes). Fifo queues: see fifo.go.
func (e *Engine) Send(ctx context.Context, q engine.Queue, msgs []engine.Message) ([]engine.SendResult, error) {
	if err := e.clockOK(); err != nil {
		return nil, err
	}
	res, err := e.send(ctx, q, msgs)
	if err != nil || e.opts.SyncReplicas <= 0 {
		return res, err
	}
	return e.confirmReplicated(ctx, q, res)
}

func (e *Engine) send(ctx context.Context, q engine.Queue, msgs []engine.Message) ([]engine.SendResult, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	if err := e.checkHeadroom(); err != nil {
		return nil, err
	}
	if err := e.touch(ctx, q.ID); err != nil {
		return nil, err
	}
	if q.Type == engine.FIFO {
		return e.sendFIFO(ctx, q, msgs)
	}
	if hasPriority(msgs) {
		if err := e.notePriority(ctx, q.ID); err != nil {
			return nil, err
		}
	}
	if hasBarrier(msgs) || e.barrierPending(q.ID) {
		if res, ok, err := e.sendHeld(ctx, q, msgs, nil); ok || err != nil {
			return res, err
		}
	}
	// A partition fenced for a barrier refuses the batch: the hold takes it, or, when the
	// barrier mode ended meanwhile, the stale fence is lifted and another partition tried.
	for try := 0; ; try++ {
		res, p, err := e.sendStandard(ctx, q, msgs)
		if !errors.Is(err, errFenced) {
			return res, err
		}
		if res, ok, err := e.sendHeld(ctx, q, msgs, []int{p}); ok || err != nil || try >= 3 {
			if err == nil && !ok {
				err = e.wrap(ctx, "send", errFenced)
			}
			return res, err
		}
	}
}

// sendStandard stores msgs in a random partition of a standard queue, sharing the script
// call with concurrent sends of that partition; it returns the partition.
func (e *Engine) sendStandard(ctx context.Context, q engine.Queue, msgs []engine.Message) ([]engine.SendResult, int, error) {
	n, err := e.partitions(ctx, q.ID)
	if err != nil {
		return nil, -1, err
	}
	if keyed(msgs) {
		// Keyed sends (conflate.go) take their own script; with a barrier pending they
		// go to the hold, unconflated (above, or when keyed_send.lua finds a fence).
		res, err := e.sendKeyed(ctx, q, msgs, n)
		return res, -1, err
	}
	p := rand.IntN(n)
	job := &sendJob{ctx: ctx, q: q, n: n, ids: make([]ids.ID, len(msgs)), payloads: make([][]byte, len(msgs)),
		delays: make([]int64, len(msgs)), err: errNotRun}
	job.wake = wakeDigests(msgs)
	res := make([]engine.SendResult, len(msgs))
	for i, m := range msgs {
		id := ids.New()
		delay := q.Delay
		if m.Delay != nil {
			delay = *m.Delay
		}
		pl := payload{Body: m.Body, Attributes: m.Attributes}
		job.ids[i], job.payloads[i], job.delays[i] = id, pl.encode(), visibleOffset(delay, m.Priority)
		job.bytes += engine.PayloadBytes(m.Body, m.Attributes)
		res[i] = engine.SendResult{MessageID: id, Partition: p}
	}
	// Calls of one lane share a script call, so they must agree on what the script takes
	// once: the partition and the expiry time's retention.
	key := laneKey('s', q.ID, p, retention(q).Milliseconds(), 0)
	e.sends.do(key, job, func(batch []*sendJob) { e.runSends(p, batch) })
	if job.err != nil {
		return nil, p, job.err
	}
	return res, p, nil
}

// sendJob is one Send waiting in its partition's lane.
type sendJob struct {
	ctx      context.Context
	q        engine.Queue
	n        int // partitions the sender saw
	ids      []ids.ID
	payloads [][]byte
	delays   []int64  // ms, with the priority band (visibleOffset)
	bytes    int64    // stored bytes of its messages
	wake     []uint64 // its messages' attribute digests (filter.WakeDigests)
	err      error
}

// runSends stores a batch of sends to partition p with one script call; the messages' send
// time is the call's.
func (e *Engine) runSends(p int, batch []*sendJob) {
	ctx, cancel := detached(batch[0].ctx)
	defer cancel()
	q, n := batch[0].q, batch[0].n
	now := e.nowMs()
	rate, err := e.sendCall(ctx, q, p, now, batch)
	if errors.Is(err, errOverQuota) && len(batch) > 1 {
		// Together they would pass the project's limit: each on its own, in turn, so the
		// ones that fit are stored.
		ok := false
		for _, b := range batch {
			r, err := e.sendCall(ctx, q, p, now, []*sendJob{b})
			b.err = e.sendErr(ctx, q, err)
			if err == nil {
				ok, rate = true, max(rate, r)
			}
		}
		if !ok {
			return
		}
	} else {
		for _, b := range batch {
			b.err = e.sendErr(ctx, q, err)
		}
		if err != nil {
			return
		}
	}
	e.seenEmpty(q.ID, p, 0)
	if rate > int64(e.opts.PartitionSendRate) && n < engine.MaxPartitions {
		e.grow(ctx, q.ID, n, now)
	}
}

// sendCall stores the jobs' messages in partition p with one script call, within the
// project's maxStoredBytes (checked in the script on a single server, by a reservation on
// Cluster); errOverQuota when they would pass it.
func (e *Engine) sendCall(ctx context.Context, q engine.Queue, p int, now int64, batch []*sendJob) (int64, error) {
	k := keysOf(q.ID, p)
	total, bytes := 0, int64(0)
	wakes := make([][]uint64, len(batch))
	for i, b := range batch {
		total += len(b.ids)
		bytes += b.bytes
		wakes[i] = b.wake
	}
	res, err := e.reserveBytes(ctx, q, bytes)
	if err != nil {
		return 0, err
	}
	args := make([]any, 0, 6+3*total)
	args = append(args, now, e.opts.Channel, rediskeys.WakePayload(q.ID, filter.MergeWakeDigests(wakes...)),
		now+retention(q).Milliseconds(), max(q.MaxStoredBytes, 0), q.Project.String())
	for _, b := range batch {
		for i, id := range b.ids {
			args = append(args, string(id[:]), b.payloads[i], now+b.delays[i])
		}
	}
	keys := e.withBytes(q, k, k.Scheduled, k.Messages, k.LegacyStates, k.Expiry, k.Rate(now/1000), k.Visible, k.BarrierFence)
	rate, err := sendScript.Run(ctx, e.rdb, keys, args...).Int64()
	if res != "" {
		e.fold(ctx, q.Project, []partKeys{k}, res)
	} else if err == nil {
		e.fold(ctx, q.Project, []partKeys{k})
	}
	if err == nil && rate == sendFenced {
		return 0, errFenced
	}
	if err == nil && rate == sendOverQuota {
		return 0, errOverQuota
	}
	return rate, err
}

// sendErr is what a send answers for err.
func (e *Engine) sendErr(ctx context.Context, q engine.Queue, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errFenced):
		return errFenced
	case errors.Is(err, errOverQuota):
		return &engine.StoredBytesExceeded{Limit: q.MaxStoredBytes}
	default:
		return e.wrap(ctx, "send", err)
	}
}
