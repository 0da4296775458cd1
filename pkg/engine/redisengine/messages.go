package redisengine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// CreateQueue needs no storage: a queue's keys appear with its first message.
func (e *Engine) CreateQueue(ctx context.Context, q engine.Queue) error {
	if q.Type != engine.Standard && q.Type != engine.FIFO {
		return apierr.Invalid("type", "must be \"standard\" or \"fifo\"")
	}
	return nil
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
	n, err := e.partitions(ctx, q.ID)
	if err != nil {
		return nil, err
	}
	p := rand.IntN(n)
	job := &sendJob{ctx: ctx, q: q, n: n, ids: make([]ids.ID, len(msgs)), payloads: make([][]byte, len(msgs)),
		delays: make([]int64, len(msgs)), err: errNotRun}
	res := make([]engine.SendResult, len(msgs))
	for i, m := range msgs {
		id := ids.New()
		delay := q.Delay
		if m.Delay != nil {
			delay = *m.Delay
		}
		pl := payload{Body: m.Body, Attributes: m.Attributes}
		job.ids[i], job.payloads[i], job.delays[i] = id, pl.encode(), max(delay, 0).Milliseconds()
		job.bytes += engine.PayloadBytes(m.Body, m.Attributes)
		res[i] = engine.SendResult{MessageID: id, Partition: p}
	}
	// Calls of one lane share a script call, so they must agree on what the script takes
	// once: the partition and the expiry time's retention.
	key := laneKey('s', q.ID, p, retention(q).Milliseconds(), 0)
	e.sends.do(key, job, func(batch []*sendJob) { e.runSends(p, batch) })
	if job.err != nil {
		return nil, job.err
	}
	return res, nil
}

// sendJob is one Send waiting in its partition's lane.
type sendJob struct {
	ctx      context.Context
	q        engine.Queue
	n        int // partitions the sender saw
	ids      []ids.ID
	payloads [][]byte
	delays   []int64 // ms
	bytes    int64   // stored bytes of its messages
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
	for _, b := range batch {
		total += len(b.ids)
		bytes += b.bytes
	}
	res, err := e.reserveBytes(ctx, q, bytes)
	if err != nil {
		return 0, err
	}
	args := make([]any, 0, 6+3*total)
	args = append(args, now, e.opts.Channel, q.ID.String(), now+retention(q).Milliseconds(), max(q.MaxStoredBytes, 0), q.Project.String())
	for _, b := range batch {
		for i, id := range b.ids {
			args = append(args, string(id[:]), b.payloads[i], now+b.delays[i])
		}
	}
	keys := e.withBytes(q, k, k.r, k.m, k.s, k.x, k.rate(now/1000), k.l)
	rate, err := sendScript.Run(ctx, e.rdb, keys, args...).Int64()
	if res != "" {
		e.fold(ctx, q.Project, []partKeys{k}, res)
	} else if err == nil {
		e.fold(ctx, q.Project, []partKeys{k})
	}
	if err == nil && rate < 0 {
		return 0, errOverQuota
	}
	return rate, err
}

// sendErr is what a send answers for err.
func (e *Engine) sendErr(ctx context.Context, q engine.Queue, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errOverQuota):
		return engine.ErrStoredBytesExceeded(q.MaxStoredBytes)
	default:
		return e.wrap(ctx, "send", err)
	}
}

// laneKey names the lane of an operation ('s' send, 'r' receive, 'a' ack) on one partition;
// a and b are the operation's own parameters that calls sharing a script call must agree on.
func laneKey(op byte, q ids.ID, p int, a, b int64) string {
	k := make([]byte, 0, 64)
	k = append(k, op, '|')
	k = append(k, q[:]...)
	k = strconv.AppendInt(append(k, '|'), int64(p), 10)
	k = strconv.AppendInt(append(k, '|'), a, 10)
	k = strconv.AppendInt(append(k, '|'), b, 10)
	return string(k)
}

// claim is how many messages a receive asks of one partition.
type claim struct{ p, n int }

// Receive claims up to req.Max messages. With one partition it is one script call; with more,
// a pipelined probe finds the partitions holding visible messages, and the claim is split
// among them starting at a rotating partition (one pipelined script call each).
func (e *Engine) Receive(ctx context.Context, q engine.Queue, req engine.ReceiveRequest) (engine.ReceiveResult, error) {
	if err := e.clockOK(); err != nil {
		return engine.ReceiveResult{}, err
	}
	want := min(max(req.Max, 1), engine.MaxBatch)
	n, err := e.partitions(ctx, q.ID)
	if err != nil {
		return engine.ReceiveResult{}, err
	}
	now := e.nowMs()
	if q.Type == engine.FIFO {
		return e.receiveFIFO(ctx, q, req, want, n, now)
	}
	if n == 1 {
		return e.claimShared(ctx, q, req, 0, want)
	}
	// First one round trip to the next partition in rotation, which has the whole batch
	// when the queue has a backlog. Only when it falls short does a pipelined probe find the
	// other partitions holding visible messages, and the rest of the claim is split among
	// them (one pipelined script call each).
	first := e.firstPartition(q.ID, n, now)
	got, gotErr := e.claimShared(ctx, q, req, first, want)
	if gotErr == nil && len(got.Messages) >= want {
		return got, nil
	}
	if gotErr == nil {
		e.seenEmpty(q.ID, first, now+emptyHint.Milliseconds())
	}
	left := want - len(got.Messages)

	calls := make([]scriptCall, n)
	for p := range n {
		k := keysOf(q.ID, p)
		calls[p] = scriptCall{peekScript, []string{k.r, k.f, k.l}, []any{now}}
	}
	cmds := e.run(ctx, calls)
	type avail struct{ p, visible int }
	var have []avail
	var nextAt int64
	if gotErr == nil && !got.NextVisibleAt.IsZero() {
		nextAt = got.NextVisibleAt.UnixMilli()
	}
	firstErr := gotErr
	for i := range n {
		p := (first + 1 + i) % n
		if p == first && gotErr == nil {
			continue // just claimed: what it had visible was taken
		}
		vals, err := cmds[p].Int64Slice()
		if err != nil || len(vals) != 2 {
			firstErr = cmp(firstErr, e.wrap(ctx, "receive", orBad(err)))
			continue
		}
		if vals[0] > 0 {
			have = append(have, avail{p, int(vals[0])})
			e.seenEmpty(q.ID, p, 0)
			continue
		}
		e.seenEmpty(q.ID, p, now+emptyHint.Milliseconds())
		if vals[1] > 0 && (nextAt == 0 || vals[1] < nextAt) {
			nextAt = vals[1]
		}
	}
	if len(have) == 0 {
		if len(got.Messages) > 0 {
			return got, nil
		}
		if firstErr != nil {
			return engine.ReceiveResult{}, firstErr
		}
		return engine.ReceiveResult{NextVisibleAt: timeOrZero(nextAt)}, nil
	}
	// Deal the rest out one at a time, so it spreads over the partitions.
	caps := make([]int, len(have))
	for i, h := range have {
		caps[i] = h.visible
	}
	asks, _ := deal(left, caps)
	var claims []claim
	for i, a := range asks {
		if a > 0 {
			claims = append(claims, claim{have[i].p, a})
		}
	}
	more, err := e.claim(ctx, q, req, now, claims)
	if err != nil {
		if len(got.Messages) > 0 {
			return got, nil
		}
		return engine.ReceiveResult{}, err
	}
	if len(got.Messages) > 0 {
		more.Messages = append(got.Messages, more.Messages...)
		more.NextVisibleAt = time.Time{}
	}
	return more, nil
}

// recvJob is one receive's claim on one partition, waiting in the partition's lane.
type recvJob struct {
	ctx  context.Context
	want int
	res  engine.ReceiveResult
	err  error
}

// claimShared claims up to want messages of partition p of a standard queue with one script
// call that concurrent receives of the partition (with the same visibility timeout and
// redrive policy) share: the call claims what they want together, and they take the
// messages in turn. One that gets none may find some elsewhere (Receive probes on).
func (e *Engine) claimShared(ctx context.Context, q engine.Queue, req engine.ReceiveRequest, p, want int) (engine.ReceiveResult, error) {
	if q.Type == engine.FIFO {
		return e.claim(ctx, q, req, e.nowMs(), []claim{{p, want}})
	}
	maxrc := int64(0)
	if q.Redrive != nil && q.Redrive.DeadLetter != nil {
		maxrc = int64(max(q.Redrive.MaxReceiveCount, 1))
	}
	job := &recvJob{ctx: ctx, want: want, err: errNotRun}
	e.recvs.do(laneKey('r', q.ID, p, max(req.Visibility, 0).Milliseconds(), maxrc), job, func(batch []*recvJob) {
		cctx, cancel := detached(batch[0].ctx)
		defer cancel()
		total := 0
		for _, b := range batch {
			total += b.want
		}
		res, err := e.claim(cctx, q, req, e.nowMs(), []claim{{p, total}})
		for _, b := range batch {
			if b.err = err; err != nil {
				continue
			}
			k := min(b.want, len(res.Messages))
			b.res.Messages, res.Messages = res.Messages[:k:k], res.Messages[k:]
			if len(b.res.Messages) == 0 {
				b.res.NextVisibleAt = res.NextVisibleAt
			}
		}
	})
	return job.res, job.err
}

// claim runs the receive script on each partition named and assembles the answer; messages
// found received maxReceiveCount times are moved on to the dead-letter queue.
func (e *Engine) claim(ctx context.Context, q engine.Queue, req engine.ReceiveRequest, now int64, claims []claim) (engine.ReceiveResult, error) {
	vis := max(req.Visibility, 0).Milliseconds()
	maxrc := 0
	if q.Redrive != nil && q.Redrive.DeadLetter != nil {
		maxrc = max(q.Redrive.MaxReceiveCount, 1)
	}
	calls := make([]scriptCall, len(claims))
	for i, c := range claims {
		k := keysOf(q.ID, c.p)
		if q.Type == engine.FIFO {
			calls[i] = scriptCall{fReceiveScript, e.withBytes(q, k, append(k.fifo(), k.o)...),
				[]any{now, c.n, vis, maxrc, 2*c.n + 10, 3*c.n + 10, engine.RedriveReason}}
			continue
		}
		calls[i] = scriptCall{receiveScript, e.withBytes(q, k, k.r, k.f, k.m, k.s, k.x, k.o, k.l, k.lh),
			[]any{now, c.n, vis, maxrc, 3 * c.n, engine.RedriveReason}}
	}
	cmds := e.run(ctx, calls)
	var res engine.ReceiveResult
	var nextAt int64
	var firstErr error
	ok := 0
	var changed []partKeys
	defer func() { e.fold(ctx, q.Project, changed) }()
	for i, c := range claims {
		vals, err := cmds[i].Slice()
		if err != nil || len(vals) != 4 {
			firstErr = cmp(firstErr, e.wrap(ctx, "receive", orBad(err)))
			continue
		}
		ok++
		if ch, _ := vals[3].(int64); ch == 1 {
			changed = append(changed, keysOf(q.ID, c.p))
		}
		if at, _ := vals[0].(int64); at > 0 && (nextAt == 0 || at < nextAt) {
			nextAt = at
		}
		taken, _ := vals[1].([]any)
		// Standard receives answer {id, m value} pairs, fifo ones {id, state, payload}.
		step := 2
		if q.Type == engine.FIFO {
			step = 3
		}
		for j := 0; j+step-1 < len(taken); j += step {
			st, pl := "", ""
			if step == 3 {
				st, pl = str(taken[j+1]), str(taken[j+2])
			} else {
				st, pl = splitValue(str(taken[j+1]))
			}
			m, err := e.received(q, c.p, taken[j], st, pl, now+vis)
			if err != nil {
				e.log.Error("redisengine: undecodable message skipped", "queue", q.ID.String(), "error", err)
				continue
			}
			res.Messages = append(res.Messages, m)
		}
		if dead, _ := vals[2].([]any); len(dead) > 0 {
			e.finishMoves(ctx, q, c.p, outboxPairs(dead))
		}
	}
	if ok == 0 {
		return engine.ReceiveResult{}, firstErr
	}
	if len(res.Messages) == 0 {
		res.NextVisibleAt = timeOrZero(nextAt)
	}
	return res, nil
}

func (e *Engine) received(q engine.Queue, p int, rawID any, rawState, rawPayload string, deadline int64) (engine.Received, error) {
	id, ok := ids.FromBytes([]byte(str(rawID)))
	if !ok {
		return engine.Received{}, fmt.Errorf("bad message id %q", str(rawID))
	}
	st, err := parseState(rawState)
	if err != nil {
		return engine.Received{}, err
	}
	pl, err := decodePayload(rawPayload)
	if err != nil {
		return engine.Received{}, fmt.Errorf("message %s: %w", id, err)
	}
	return engine.Received{
		Delivery:           engine.Delivery{Queue: q.ID, Partition: p, MessageID: id, Attempt: st.Attempt},
		Body:               pl.Body,
		Attributes:         pl.Attributes,
		ReceiveCount:       int(st.Attempt),
		SentAt:             fromMs(st.SentAt),
		VisibilityDeadline: fromMs(deadline),
		GroupID:            pl.GroupID,
		SequenceNumber:     pl.Sequence,
		DeadLetter:         pl.DeadLetter,
	}, nil
}

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
			errs[i] = apierr.ErrStale
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
			errs[j] = apierr.ErrStale
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
				return scriptCall{fAckScript, e.withBytes(q, k, k.fifo()...), args}
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
		args := []any{e.nowMs()}
		type slot struct {
			job *ackJob
			i   int
		}
		var sent []slot
		owner := map[ids.ID]*ackJob{}
		for _, b := range batch {
			for i, d := range b.ds {
				if d.Attempt == 0 {
					b.errs[i] = apierr.ErrStale
					continue
				}
				if o, ok := owner[d.MessageID]; ok && o != b {
					b.errs[i] = apierr.ErrStale
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
				s.job.errs[s.i] = apierr.ErrStale
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
			pre[i] = apierr.Invalid("visibilityTimeoutSeconds", "must be between 0 and %d", int(engine.MaxVisibility.Seconds()))
		}
	}
	return e.settleBatch(ctx, q, "change visibility", ds, pre,
		func(k partKeys, idx []int) scriptCall {
			args := []any{now, engine.MaxInFlight.Milliseconds(), e.opts.Channel, q.ID.String()}
			for _, j := range idx {
				args = append(args, string(ds[j].MessageID[:]), ds[j].Attempt, cs[j].Visibility.Milliseconds())
			}
			if q.Type == engine.FIFO {
				return scriptCall{fVisibilityScript, k.fifo(), args}
			}
			return scriptCall{visibilityScript, []string{k.f, k.m, k.s}, args}
		},
		func(_ int, idx []int, val any, errs []error) error {
			return codes(val, idx, errs, func(c int64) error {
				if c == 2 {
					return apierr.New(apierr.VisibilityLimitExceeded,
						"the new deadline would be more than %s after the message was received", engine.MaxInFlight)
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
	ds := make([]engine.Delivery, len(rs))
	for i, r := range rs {
		ds[i] = r.Delivery
	}
	return e.settleBatch(ctx, q, "dead-letter", ds, nil,
		func(k partKeys, idx []int) scriptCall {
			args := []any{now, redrive}
			if q.Type == engine.FIFO {
				args = append(args, e.opts.Channel, q.ID.String())
			}
			for _, j := range idx {
				reason := rs[j].Reason
				if reason == "" {
					reason = engine.DefaultDLQReason
				}
				args = append(args, string(ds[j].MessageID[:]), ds[j].Attempt, reason)
			}
			if q.Type == engine.FIFO {
				return scriptCall{fDeadLetterScript, e.withBytes(q, k, append(k.fifo(), k.o)...), args}
			}
			return scriptCall{deadLetterScript, e.withBytes(q, k, k.r, k.f, k.m, k.s, k.x, k.o), args}
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

// finishMoves is the second step of dead-letter moves out of partition p of q: insert each
// message into the dead-letter queue (idempotently, by message id), then clear its outbox
// entry. A failure leaves the entry for Sweep to finish; the first step already took the
// message out of q, so the caller's answer does not depend on this one.
//
// The dead-letter copy keeps the message id, body, attributes, group id and send time, starts
// at receiveCount 0, records {source queue, reason, at}, and expires at + the dead-letter
// queue's retention (its retention counts from its arrival there, like a send).
func (e *Engine) finishMoves(ctx context.Context, src engine.Queue, p int, entries [][2]string) {
	if src.Redrive == nil || src.Redrive.DeadLetter == nil {
		return // left in the outbox until a policy names a dead-letter queue again
	}
	dlq := src.Redrive.DeadLetter
	dn, err := e.partitions(ctx, dlq.ID)
	if err == nil {
		err = e.touch(ctx, dlq.ID)
	}
	if err != nil {
		e.log.Warn("redisengine: dead-letter move postponed", "queue", src.ID.String(), "error", err)
		return
	}
	var calls []scriptCall
	var fields []string // outbox fields to clear once their insert succeeded (or cannot ever)
	var callField []string
	var moved []*fitem     // into a fifo dead-letter queue
	var touched []partKeys // dead-letter partitions inserted into
	for _, kv := range entries {
		ob, err := parseOutbox(kv[0], kv[1])
		var pl *payload
		if err == nil {
			pl, err = decodePayload(ob.Payload)
		}
		if err != nil {
			e.log.Error("redisengine: dropping an undecodable dead-letter move", "queue", src.ID.String(), "error", err)
			fields = append(fields, kv[0])
			continue
		}
		pl.DeadLetter = &engine.DeadLetterInfo{SourceQueue: src.ID, Reason: ob.Reason, At: fromMs(ob.At)}
		if dlq.Type == engine.FIFO {
			if pl.GroupID == "" {
				pl.GroupID = noGroup
			}
			moved = append(moved, &fitem{idx: len(moved), id: ob.ID, pl: *pl, visible: ob.At,
				expires: ob.At + retention(*dlq).Milliseconds(), sent: ob.SentAt, mode: "n", move: true})
			callField = append(callField, kv[0])
			continue
		}
		// The partition follows from the id, so a retried insert finds the first one.
		dp := int(binary.BigEndian.Uint64(ob.ID[8:]) % uint64(dn))
		k := keysOf(dlq.ID, dp)
		calls = append(calls, scriptCall{dlqInsertScript, e.withBytes(*dlq, k, k.r, k.m, k.s, k.x),
			[]any{kv[0], pl.encode(), ob.At, ob.At + retention(*dlq).Milliseconds(), ob.SentAt, e.opts.Channel, dlq.ID.String(), dlq.Project.String()}})
		callField = append(callField, kv[0])
		touched = append(touched, k)
	}
	if len(moved) > 0 {
		if err := e.insertFIFO(ctx, *dlq, moved); err != nil {
			e.log.Warn("redisengine: dead-letter insert failed; Sweep will retry", "queue", src.ID.String(), "error", err)
		} else {
			fields = append(fields, callField...)
		}
	}
	for i, cmd := range e.run(ctx, calls) {
		if err := cmd.Err(); err != nil {
			e.log.Warn("redisengine: dead-letter insert failed; Sweep will retry", "queue", src.ID.String(), "error", err)
			continue
		}
		fields = append(fields, callField[i])
	}
	e.fold(ctx, dlq.Project, touched)
	if len(fields) > 0 {
		k := keysOf(src.ID, p)
		args := make([]any, len(fields))
		for i, f := range fields {
			args[i] = f
		}
		if err := obClearScript.Run(ctx, e.rdb, e.withBytes(src, k, k.o), args...).Err(); err != nil {
			e.log.Warn("redisengine: clearing the dead-letter outbox failed; Sweep will retry", "queue", src.ID.String(), "error", err)
		}
		e.fold(ctx, src.Project, []partKeys{k})
	}
}

var errBadReply = fmt.Errorf("unexpected script reply")

func orBad(err error) error {
	if err == nil {
		return errBadReply
	}
	return err
}

// cmp keeps the first error.
func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func timeOrZero(ms int64) (t time.Time) {
	if ms > 0 {
		t = fromMs(ms)
	}
	return t
}

// deal hands want out one at a time, round robin, to slots that can take at most caps[i]
// each, so a request spreads over the partitions that have work. It returns each slot's share
// and what no slot could take.
func deal(want int, caps []int) (asks []int, left int) {
	asks = make([]int, len(caps))
	left = want
	for left > 0 {
		dealt := false
		for i := range caps {
			if left > 0 && asks[i] < caps[i] {
				asks[i]++
				left--
				dealt = true
			}
		}
		if !dealt {
			break
		}
	}
	return asks, left
}
