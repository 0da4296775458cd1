package redisengine

import (
	"context"
	"fmt"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// claim is one partition's share of a receive: n messages wanted, scan candidates examined at
// most (0: the default for n) and, with a filter, scanBytes of stored messages read at most
// (and the one that crosses it; 0: no byte bound).
type claim struct{ p, n, scan, scanBytes int }

// scanned is what a receive's scripts examined: candidates and the bytes of stored messages
// they read to match a filter.
type scanned struct{ n, bytes int }

// Receive claims up to req.Max messages. With one partition it is one script call; with more,
// a pipelined probe finds the partitions holding visible messages, and the claim is split
// among them starting at a rotating partition (one pipelined script call each).
func (e *Engine) Receive(ctx context.Context, q engine.Queue, req engine.ReceiveRequest) (engine.ReceiveResult, error) {
	if req.Filter.Empty() {
		req.Filter = nil
	}
	if req.Consumer != nil {
		return e.receiveAsConsumer(ctx, q, req) // consumers.go
	}
	if q.Exclusive() && req.BindTo == "" {
		return engine.ReceiveResult{}, engine.ErrConsumerRequired
	}
	res, err := e.receive(ctx, q, req)
	if err != nil || q.Type != engine.Standard || len(res.Messages) >= min(max(req.Max, 1), engine.MaxBatch) ||
		!e.barrierPending(q.ID) {
		return res, err
	}
	return e.receiveBarrier(ctx, q, req, res)
}

// receive is Receive without the barrier step.
func (e *Engine) receive(ctx context.Context, q engine.Queue, req engine.ReceiveRequest) (engine.ReceiveResult, error) {
	if err := e.clockOK(); err != nil {
		return engine.ReceiveResult{}, err
	}
	want := min(max(req.Max, 1), engine.MaxBatch)
	n, err := e.partitions(ctx, q.ID)
	if err != nil {
		return engine.ReceiveResult{}, err
	}
	now := e.nowMs()
	if req.Filter != nil {
		return e.receiveFiltered(ctx, q, req, want, n, now) // filter.go
	}
	if q.Type == engine.FIFO {
		return e.receiveFIFO(ctx, q, req, want, n, now)
	}
	if n == 1 {
		return e.claimShared(ctx, q, req, 0, want)
	}
	if e.priorityKnown(q.ID) {
		return e.receiveByPriority(ctx, q, req, want, n, now) // priority.go
	}
	return e.receiveRotating(ctx, q, req, want, n, now)
}

// receiveRotating is a receive of a standard queue with several partitions and no priority
// above 0: it claims from the partition next in rotation, and only when that falls short
// probes the others.
func (e *Engine) receiveRotating(ctx context.Context, q engine.Queue, req engine.ReceiveRequest, want, n int, now int64) (engine.ReceiveResult, error) {
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
		calls[p] = scriptCall{peekScript, []string{k.Scheduled, k.InFlight, k.Visible}, []any{now}}
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
			claims = append(claims, claim{p: have[i].p, n: a})
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
		return e.claim(ctx, q, req, e.nowMs(), []claim{{p: p, n: want}})
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
		res, err := e.claim(cctx, q, req, e.nowMs(), []claim{{p: p, n: total}})
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
	res, _, err := e.claimCounted(ctx, q, req, now, claims)
	return res, err
}

// claimCounted is claim that also answers what the scripts examined.
func (e *Engine) claimCounted(ctx context.Context, q engine.Queue, req engine.ReceiveRequest, now int64, claims []claim) (engine.ReceiveResult, scanned, error) {
	vis := max(req.Visibility, 0).Milliseconds()
	calls, err := e.claimCalls(ctx, q, req, now, vis, claims)
	if err != nil {
		return engine.ReceiveResult{}, scanned{}, err
	}
	cmds := e.run(ctx, calls)
	var res engine.ReceiveResult
	var nextAt int64
	var firstErr error
	ok := 0
	var seen scanned
	var changed []partKeys
	defer func() { e.fold(ctx, q.Project, changed) }()
	for i, c := range claims {
		vals, err := cmds[i].Slice()
		if err != nil || len(vals) < 4 {
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
		if res.Messages == nil && len(taken) > 0 {
			res.Messages = make([]engine.Received, 0, req.Max) // one allocation, not a growing slice's five
		}
		var prios []any // standard receives: the priority of each message taken
		if len(vals) > 5 {
			prios, _ = vals[4].([]any)
			n, _ := vals[5].(int64)
			seen.n += int(n)
		}
		if len(vals) > 6 {
			b, _ := vals[6].(int64)
			seen.bytes += int(b)
		}
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
			if k := j / step; k < len(prios) {
				pr, _ := prios[k].(int64)
				m.Priority = int(pr)
			}
			if q.AtMostOnce {
				m.VisibilityDeadline = time.Time{} // removed already: it was never in flight
			}
			res.Messages = append(res.Messages, m)
		}
		if dead, _ := vals[2].([]any); len(dead) > 0 {
			e.finishMoves(ctx, q, c.p, outboxPairs(dead))
		}
	}
	if ok == 0 {
		return engine.ReceiveResult{}, scanned{}, firstErr
	}
	e.scanBytes.Add(int64(seen.bytes))
	if len(res.Messages) == 0 {
		res.NextVisibleAt = timeOrZero(nextAt)
	}
	return res, seen, nil
}

// claimCalls are the receive script calls of claims, one per partition claimed.
func (e *Engine) claimCalls(ctx context.Context, q engine.Queue, req engine.ReceiveRequest, now, vis int64, claims []claim) ([]scriptCall, error) {
	flt := encodeFilter(req.Filter)
	maxrc := 0
	if q.Redrive != nil && q.Redrive.DeadLetter != nil {
		maxrc = max(q.Redrive.MaxReceiveCount, 1)
	}
	elsewhere, err := e.bindElsewhere(ctx, q, req.BindTo, claims) // groupbind.go
	if err != nil {
		return nil, err
	}
	calls := make([]scriptCall, len(claims))
	for i, c := range claims {
		k := keysOf(q.ID, c.p)
		if q.Type == engine.FIFO {
			groups, budget := 2*c.n+10, 3*c.n+10
			if c.scan > 0 {
				groups, budget = c.scan, c.scan
			}
			if q.Exclusive() {
				groups = max(groups, exclusiveScan)
			}
			args := append([]any{now, c.n, vis, maxrc, groups, budget, engine.RedriveReason, flt, c.scanBytes},
				bindArgs(q, req.BindTo, elsewhere[i])...)
			args = append(args, parkArg(q), engine.ParkGroupReason)
			calls[i] = scriptCall{fifoReceiveScript, e.withBytes(q, k, append(k.fifo(), k.DeadLetterOutbox, k.GroupBindings, k.ConsumerBindings, k.GroupsParked)...), args}
			continue
		}
		scan := 3 * c.n
		if c.scan > 0 {
			scan = c.scan
		}
		calls[i] = scriptCall{receiveScript, e.withBytes(q, k, k.Scheduled, k.InFlight, k.Messages, k.LegacyStates, k.Expiry, k.DeadLetterOutbox, k.Visible, k.VisibleTaken, k.ConflationKeys, k.ConflationKeyOf),
			[]any{now, c.n, vis, maxrc, scan, engine.RedriveReason, flag(q.AtMostOnce), flt, c.scanBytes}}
	}
	return calls, nil
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
		ReceiveCount:       st.ReceiveCount(pl.Base),
		SentAt:             fromMs(st.SentAt),
		VisibilityDeadline: fromMs(deadline),
		GroupID:            pl.GroupID,
		SequenceNumber:     pl.Sequence,
		DeadLetter:         pl.DeadLetter,
	}, nil
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
