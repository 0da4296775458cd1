package redisengine

import (
	"context"
	"slices"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// settleBatch groups deliveries by partition and runs one script per partition touched
// (pipelined). build makes the script call for one partition's entries (indexes into the
// request); apply reads its answer. Entries whose handle cannot name a live delivery of this
// queue are stale without a round trip.
func (e *Engine) settleBatch(ctx context.Context, q engine.Queue, op string, ds []engine.Delivery, pre []error,
	build func(k partKeys, idx []int) scriptCall,
	apply func(p int, idx []int, val any, errs []error) error,
) ([]error, error) {
	errs := make([]error, len(ds))
	byPart := map[int][]int{}
	for i, d := range ds {
		if pre != nil && pre[i] != nil {
			errs[i] = pre[i]
			continue
		}
		if d.Queue != q.ID || d.Partition < 0 || d.Partition >= engine.MaxPartitions || d.Attempt == 0 {
			errs[i] = engine.ErrStale
			continue
		}
		byPart[d.Partition] = append(byPart[d.Partition], i)
	}
	parts := make([]int, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	calls := make([]scriptCall, len(parts))
	for i, p := range parts {
		calls[i] = build(keysOf(q.ID, p), byPart[p])
	}
	cmds := e.run(ctx, calls)
	var firstErr error
	ok := 0
	for i, p := range parts {
		idx := byPart[p]
		err := cmds[i].Err()
		if err == nil {
			err = apply(p, idx, cmds[i].Val(), errs)
		}
		if err != nil {
			err = e.wrap(ctx, op, err)
			firstErr = cmp(firstErr, err)
			for _, j := range idx {
				errs[j] = err
			}
			continue
		}
		ok++
	}
	if ok == 0 && firstErr != nil {
		return nil, firstErr
	}
	return errs, nil
}

// codes reads a script's per-entry codes: 1 done, 0 stale, anything else from other.
func codes(val any, idx []int, errs []error, other func(code int64) error) error {
	vals, _ := val.([]any)
	if len(vals) != len(idx) {
		return errBadReply
	}
	for n, j := range idx {
		switch c, _ := vals[n].(int64); c {
		case 1:
			errs[j] = nil
		case 0:
			errs[j] = engine.ErrStale
		default:
			errs[j] = other(c)
		}
	}
	return nil
}

// Ack deletes the messages of valid deliveries. On a standard queue, an ack whose deliveries
// are all of one partition shares its script call with concurrent ones of that partition.
func (e *Engine) Ack(ctx context.Context, q engine.Queue, ds []engine.Delivery) ([]error, error) {
	if q.Type == engine.Standard && len(ds) > 0 {
		if p := ds[0].Partition; p >= 0 && p < engine.MaxPartitions && ds[0].Queue == q.ID {
			one := true
			for _, d := range ds[1:] {
				one = one && d.Partition == p && d.Queue == q.ID
			}
			if one {
				return e.ackShared(ctx, q, p, ds)
			}
		}
	}
	now := e.nowMs()
	return e.settleBatch(ctx, q, "ack", ds, nil,
		func(k partKeys, idx []int) scriptCall {
			args := []any{now}
			if q.Type == engine.FIFO {
				args = append(args, e.opts.Channel, q.ID.String())
			}
			for _, j := range idx {
				args = append(args, string(ds[j].MessageID[:]), ds[j].Attempt)
			}
			if q.Type == engine.FIFO {
				return scriptCall{fifoAckScript, e.withBytes(q, k, append(k.fifo(), k.binds()...)...), args}
			}
			return scriptCall{ackScript, e.withBytes(q, k, k.messages()...), args}
		},
		func(p int, idx []int, val any, errs []error) error {
			e.fold(ctx, q.Project, []partKeys{keysOf(q.ID, p)})
			return codes(val, idx, errs, func(int64) error { return errBadReply })
		})
}

// ackJob is one Ack of one partition's deliveries, waiting in the partition's lane.
type ackJob struct {
	ctx  context.Context
	ds   []engine.Delivery
	errs []error
	err  error
}

// ackShared acknowledges deliveries of partition p of a standard queue with one script call
// shared with concurrent acks of the partition. A message acknowledged by two of them counts
// as acknowledged by the first: the later one's entry is stale, as if they had run in turn.
func (e *Engine) ackShared(ctx context.Context, q engine.Queue, p int, ds []engine.Delivery) ([]error, error) {
	job := &ackJob{ctx: ctx, ds: ds, errs: make([]error, len(ds)), err: errNotRun}
	e.acks.do(laneKey('a', q.ID, p, 0, 0), job, func(batch []*ackJob) {
		cctx, cancel := detached(batch[0].ctx)
		defer cancel()
		total := 0
		for _, b := range batch {
			total += len(b.ds)
		}
		args := append(make([]any, 0, 1+2*total), e.nowMs())
		type slot struct {
			job *ackJob
			i   int
		}
		sent := make([]slot, 0, total)
		owner := make(map[ids.ID]*ackJob, total)
		for _, b := range batch {
			for i, d := range b.ds {
				if d.Attempt == 0 {
					b.errs[i] = engine.ErrStale
					continue
				}
				if o, ok := owner[d.MessageID]; ok && o != b {
					b.errs[i] = engine.ErrStale
					continue
				}
				owner[d.MessageID] = b
				args = append(args, string(d.MessageID[:]), d.Attempt)
				sent = append(sent, slot{b, i})
			}
		}
		val, err := any(nil), error(nil)
		if len(sent) > 0 {
			k := keysOf(q.ID, p)
			val, err = ackScript.Run(cctx, e.rdb, e.withBytes(q, k, k.messages()...), args...).Result()
			e.fold(cctx, q.Project, []partKeys{k})
		}
		vals, _ := val.([]any)
		if err == nil && len(vals) != len(sent) {
			err = errBadReply
		}
		if err != nil {
			err = e.wrap(cctx, "ack", err)
			for _, b := range batch {
				b.err = err
			}
			return
		}
		for n, s := range sent {
			switch c, _ := vals[n].(int64); c {
			case 1:
				s.job.errs[s.i] = nil
			case 0:
				s.job.errs[s.i] = engine.ErrStale
			default:
				s.job.errs[s.i] = errBadReply
			}
		}
		for _, b := range batch {
			b.err = nil // only now: a job counts as done once its entries are
		}
	})
	if job.err != nil {
		return nil, job.err
	}
	return job.errs, nil
}

// ChangeVisibility sets valid deliveries' deadlines to now+d (0 releases them), refusing a
// deadline more than engine.MaxInFlight after the receive.
func (e *Engine) ChangeVisibility(ctx context.Context, q engine.Queue, cs []engine.VisibilityChange) ([]error, error) {
	if err := e.clockOK(); err != nil {
		return nil, err
	}
	now := e.nowMs()
	ds := make([]engine.Delivery, len(cs))
	pre := make([]error, len(cs))
	for i, c := range cs {
		ds[i] = c.Delivery
		if c.Visibility < 0 || c.Visibility > engine.MaxVisibility { // the API refuses these first
			pre[i] = engine.ErrBadVisibility
		}
	}
	return e.settleBatch(ctx, q, "change visibility", ds, pre,
		func(k partKeys, idx []int) scriptCall {
			args := []any{now, engine.MaxInFlight.Milliseconds(), e.opts.Channel, q.ID.String()}
			for _, j := range idx {
				args = append(args, string(ds[j].MessageID[:]), ds[j].Attempt, cs[j].Visibility.Milliseconds())
			}
			if q.Type == engine.FIFO {
				return scriptCall{fifoVisibilityScript, k.fifo(), args}
			}
			return scriptCall{visibilityScript, []string{k.InFlight, k.Messages, k.LegacyStates}, args}
		},
		func(_ int, idx []int, val any, errs []error) error {
			return codes(val, idx, errs, func(c int64) error {
				if c == 2 {
					return engine.ErrVisibilityLimit
				}
				return errBadReply
			})
		})
}

// DeadLetter moves valid deliveries to the queue's dead-letter queue (through the outbox), or
// deletes them when the queue has no redrive policy.
func (e *Engine) DeadLetter(ctx context.Context, q engine.Queue, rs []engine.DeadLetterRequest) ([]error, error) {
	if err := e.clockOK(); err != nil {
		return nil, err
	}
	now := e.nowMs()
	redrive := "0"
	if q.Redrive != nil && q.Redrive.DeadLetter != nil {
		redrive = "1"
	}
	mode := redrive // fifo_deadletter.lua's: the poison policy too
	switch q.Parking() {
	case engine.PoisonPark:
		mode = "p"
	case engine.PoisonParkGroup:
		mode = "P"
	}
	ds := make([]engine.Delivery, len(rs))
	for i, r := range rs {
		ds[i] = r.Delivery
	}
	return e.settleBatch(ctx, q, "dead-letter", ds, nil,
		func(k partKeys, idx []int) scriptCall {
			args := []any{now, redrive}
			if q.Type == engine.FIFO {
				args = []any{now, mode, e.opts.Channel, q.ID.String(), engine.ParkGroupReason}
			}
			for _, j := range idx {
				reason := rs[j].Reason
				if reason == "" {
					reason = engine.DefaultDLQReason
				}
				args = append(args, string(ds[j].MessageID[:]), ds[j].Attempt, reason)
			}
			if q.Type == engine.FIFO {
				return scriptCall{fifoDeadLetterScript, e.withBytes(q, k, append(k.fifo(), k.DeadLetterOutbox, k.GroupBindings, k.ConsumerBindings, k.GroupsParked)...), args}
			}
			return scriptCall{deadLetterScript, e.withBytes(q, k, k.Scheduled, k.InFlight, k.Messages, k.LegacyStates, k.Expiry, k.DeadLetterOutbox), args}
		},
		func(p int, idx []int, val any, errs []error) error {
			if redrive == "0" {
				e.fold(ctx, q.Project, []partKeys{keysOf(q.ID, p)})
			}
			vals, _ := val.([]any)
			if len(vals) != 2 {
				return errBadReply
			}
			if err := codes(vals[0], idx, errs, func(int64) error { return errBadReply }); err != nil {
				return err
			}
			if moved, _ := vals[1].([]any); len(moved) > 0 {
				e.finishMoves(ctx, q, p, outboxPairs(moved))
			}
			return nil
		})
}

// outboxPairs turns a script's {id, value, id, value, ...} into pairs.
func outboxPairs(vals []any) [][2]string {
	out := make([][2]string, 0, len(vals)/2)
	for i := 0; i+1 < len(vals); i += 2 {
		out = append(out, [2]string{str(vals[i]), str(vals[i+1])})
	}
	return out
}
