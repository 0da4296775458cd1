package redisengine

import (
	"context"
	"errors"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// Copies of topic entries into queues (engine.Topics: Copy). A standard queue's copies all go
// to its partition 0, which always exists, in one script (copy.lua) that also keeps each
// binding's high-water mark ({q:<id>:0}:tc): entries at or below it are skipped, and it rises
// in the same step as the store, so a batch copied twice (a crash between Copy and
// AdvanceBindings, a lease taken over) is stored once. A fifo queue's copies take the fifo
// send path (fifo.go) with their message ids and dedup ids: a copy answered as a duplicate of
// its own id was stored before; one answered as a duplicate of another message's is refused.

// Copy stores a binding's batch in q (see above).
func (e *Engine) Copy(ctx context.Context, q engine.Queue, b engine.CopyBatch) ([]error, error) {
	if err := e.clockOK(); err != nil {
		return nil, err
	}
	if len(b.Messages) == 0 {
		return []error{}, nil
	}
	if err := e.checkHeadroom(); err != nil {
		return nil, err
	}
	if err := e.touch(ctx, q.ID); err != nil {
		return nil, err
	}
	if q.Type == engine.FIFO {
		return e.copyFIFO(ctx, q, b)
	}
	if _, err := e.partitions(ctx, q.ID); err != nil {
		return nil, err
	}
	if e.barrierPending(q.ID) {
		// A copy stored past a pending barrier would be delivered before it: the fan-out
		// tries again once the barrier has left the queue.
		return nil, &engine.Failure{Err: engine.ErrUnavailable, Op: "copy: the queue has a pending barrier message"}
	}
	return e.copyStandard(ctx, q, b)
}

// copyStandard runs copy.lua in partition 0.
func (e *Engine) copyStandard(ctx context.Context, q engine.Queue, b engine.CopyBatch) ([]error, error) {
	k := keysOf(q.ID, 0)
	now := e.nowMs()
	n := len(b.Messages)
	payloads := make([][]byte, n)
	sizes := make([]int64, n)
	msgs := make([]engine.Message, n)
	for i, m := range b.Messages {
		pl := payload{Body: m.Message.Body, Attributes: m.Message.Attributes}
		payloads[i], sizes[i] = pl.encode(), engine.PayloadBytes(m.Message.Body, m.Message.Attributes)
		msgs[i] = engine.Message{Attributes: m.Message.Attributes}
	}
	allowed, held, err := e.copyReserve(ctx, q, sizes)
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, 9+4*n)
	args = append(args, now, e.opts.Channel, rediskeys.WakePayload(q.ID, wakeDigests(msgs)),
		now+retention(q).Milliseconds(), max(q.MaxStoredBytes, 0), q.Project.String(), b.Binding.String(),
		b.Messages[n-1].Sequence, now+max(q.Delay, 0).Milliseconds())
	for i, m := range b.Messages {
		ok := "1"
		if !allowed[i] {
			ok = "0"
		}
		args = append(args, m.Sequence, string(m.ID[:]), payloads[i], ok)
	}
	keys := e.withBytes(q, k, k.Scheduled, k.Messages, k.LegacyStates, k.Expiry, k.Visible, k.BarrierFence, rediskeys.TopicCopied(q.ID))
	vals, err := copyScript.Run(ctx, e.rdb, keys, args...).Slice()
	e.fold(ctx, q.Project, []partKeys{k}, held...)
	if err != nil {
		return nil, e.wrap(ctx, "copy", err)
	}
	if code, ok := loneCode(vals); ok && code == copyFenced {
		return nil, e.wrap(ctx, "copy", errFenced)
	}
	codes, _ := vals[1].([]any)
	if len(vals) != 2 || len(codes) != n {
		return nil, e.wrap(ctx, "copy", errBadReply)
	}
	errs := make([]error, n)
	for i, c := range codes {
		if code, _ := c.(int64); code == 0 {
			errs[i] = &engine.StoredBytesExceeded{Limit: q.MaxStoredBytes}
		}
	}
	if stored, _ := vals[0].(int64); stored > 0 {
		e.seenEmpty(q.ID, 0, 0)
	}
	return errs, nil
}

// copyReserve reserves the copies' bytes under the project's limit on Cluster: the whole
// batch, or, when that does not fit, each message in turn, so the ones that fit are stored.
// It returns which messages may be stored and the reservations to release.
func (e *Engine) copyReserve(ctx context.Context, q engine.Queue, sizes []int64) ([]bool, []string, error) {
	allowed := make([]bool, len(sizes))
	for i := range allowed {
		allowed[i] = true
	}
	var total int64
	for _, s := range sizes {
		total += s
	}
	held, err := e.reserveBytes(ctx, q, total)
	if err == nil {
		if held == "" {
			return allowed, nil, nil
		}
		return allowed, []string{held}, nil
	}
	if !errors.Is(err, errOverQuota) {
		return nil, nil, err
	}
	var all []string
	for i, s := range sizes {
		r, err := e.reserveBytes(ctx, q, s)
		switch {
		case errors.Is(err, errOverQuota):
			allowed[i] = false
		case err != nil:
			e.fold(ctx, q.Project, nil, all...)
			return nil, nil, err
		case r != "":
			all = append(all, r)
		}
	}
	return allowed, all, nil
}

// copyFIFO stores the copies through the fifo send path (see the top of this file). A
// failure of the store itself fails the call even when some copies were stored: the batch
// is copied again, and those are then found as duplicates of their own ids.
func (e *Engine) copyFIFO(ctx context.Context, q engine.Queue, b engine.CopyBatch) ([]error, error) {
	now := e.nowMs()
	expires := now + retention(q).Milliseconds()
	visible := now + max(q.Delay, 0).Milliseconds()
	items := make([]*fitem, len(b.Messages))
	for i, m := range b.Messages {
		dedup := m.Message.DedupID
		if dedup == "" {
			dedup = m.ID.String() // the contract gives one; this keeps a copy deduplicated anyway
		}
		group := m.Message.GroupID
		if group == "" {
			group = noGroup
		}
		// "r": a reservation naming its own id (an earlier attempt cut between the two steps)
		// is its own, re-taken in batch order with a fresh sequence number; fifo_send answers it
		// as stored when that attempt stored it ("S"+id). Going round again instead would
		// give it a number after the rest of the batch: out of its group's order.
		items[i] = &fitem{idx: i, id: m.ID, dedup: dedup, visible: visible, expires: expires, sent: now, mode: "r",
			keep: true, pl: payload{Body: m.Message.Body, Attributes: m.Message.Attributes, GroupID: group}}
	}
	res, err := e.storeFIFO(ctx, q, items, now)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(res))
	for i, r := range res {
		m := b.Messages[i]
		switch {
		case r.Err != nil && errors.Is(r.Err, engine.ErrStoredBytesExceeded):
			errs[i] = r.Err
		case r.Err != nil:
			return nil, r.Err
		case r.Duplicate && r.MessageID != m.ID:
			errs[i] = &engine.DedupTaken{DedupID: m.Message.DedupID}
		}
	}
	return errs, nil
}
