package redisengine

import (
	"context"
	"slices"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Priority across partitions (docs/delivery-options.md#priority: a receive returns the
// highest-priority visible messages first). Within a partition receive.lua takes the highest band
// first, but a queue's messages are spread over partitions and a receive claims from one partition
// first (messages.go), which would hand out one partition's priority 0 while another holds a 9. So
// a queue that has had a message of priority above 0 is flagged (field pr of its partitions
// hash, set by the first such send of each process and cached with the partition count), and
// a receive on a flagged queue of several partitions first probes every partition's visible
// bands (priority_peek.lua, one pipelined round trip) and then claims from each partition exactly its
// share of the highest bands of the whole queue (one pipelined receive.lua call each): a
// partition's share is always a prefix of its own order, which receive.lua takes.
//
// Cost: unflagged queues (every message of priority 0) keep the one-round-trip path and read
// no more (the flag rides on the partition count's HMGET). Flagged ones pay one round trip
// more per receive on several partitions, and nothing more on one.
//
// The guarantee holds as of the probe: a message that becomes visible between the probe and
// the claim waits for the next receive, and a concurrent receive that takes what was probed
// makes this one return fewer. Within one priority, oldest first holds per partition; the
// band's share is dealt among the partitions holding it in turn, not by age across them.
// Another replica learns of the flag with its next partition count (partitionCacheTTL).

// hasPriority reports whether a send has a message of priority above 0.
func hasPriority(msgs []engine.Message) bool {
	for i := range msgs {
		if msgs[i].Priority > 0 {
			return true
		}
	}
	return false
}

// priorityKnown reports the cached priority flag of queue q.
func (e *Engine) priorityKnown(q ids.ID) bool {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	return e.parts[q].prio
}

// markPriority records whether queue q has had priorities.
func (e *Engine) markPriority(q ids.ID, on bool) {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	if pc, ok := e.parts[q]; ok {
		pc.prio = on
		e.parts[q] = pc
	} else if on {
		e.parts[q] = partCount{n: 1, prio: true} // at zero time: refreshed at the next use
	}
}

// notePriority flags q as having had priorities before a send stores one (one round trip the
// first time this process sees it; the flag is never cleared).
func (e *Engine) notePriority(ctx context.Context, q ids.ID) error {
	if e.priorityKnown(q) {
		return nil
	}
	if err := e.rdb.HSet(ctx, partitionsKey(q), "pr", 1).Err(); err != nil {
		return e.wrap(ctx, "send", err)
	}
	e.markPriority(q, true)
	return nil
}

// receiveByPriority claims up to want messages of a standard queue of n partitions by
// priority across them (see the top of this file).
func (e *Engine) receiveByPriority(ctx context.Context, q engine.Queue, req engine.ReceiveRequest, want, n int, now int64) (engine.ReceiveResult, error) {
	calls := make([]scriptCall, n)
	for p := range n {
		k := keysOf(q.ID, p)
		calls[p] = scriptCall{priorityPeekScript, []string{k.Scheduled, k.InFlight, k.Visible}, []any{now, want}}
	}
	counts := make([][engine.MaxPriority + 1]int, n)
	var nextAt int64
	var firstErr error
	ok := 0
	for p, cmd := range e.run(ctx, calls) {
		vals, err := cmd.Int64Slice()
		if err != nil || len(vals) == 0 {
			firstErr = cmp(firstErr, e.wrap(ctx, "receive", orBad(err)))
			continue
		}
		ok++
		if at := vals[0]; at > 0 && (nextAt == 0 || at < nextAt) {
			nextAt = at
		}
		for i := 1; i+1 < len(vals); i += 2 {
			if b := vals[i]; b >= 0 && b <= engine.MaxPriority {
				counts[p][b] = int(vals[i+1])
			}
		}
	}
	if ok == 0 {
		return engine.ReceiveResult{}, firstErr
	}
	claims := shareByBand(counts, want, e.firstPartition(q.ID, n, now))
	if len(claims) == 0 {
		return engine.ReceiveResult{NextVisibleAt: timeOrZero(nextAt)}, nil
	}
	res, err := e.claim(ctx, q, req, now, claims)
	if err != nil {
		return engine.ReceiveResult{}, err
	}
	// Partition by partition, each highest first: the batch in priority order.
	slices.SortStableFunc(res.Messages, func(a, b engine.Received) int { return b.Priority - a.Priority })
	return res, nil
}

// shareByBand deals want out from the highest band down among the partitions holding each
// (counts[p][b]: partition p's visible messages of band b), one at a time from partition
// first on, so each partition's share is a prefix of its own order.
func shareByBand(counts [][engine.MaxPriority + 1]int, want, first int) []claim {
	n := len(counts)
	asks := make([]int, n)
	for b := engine.MaxPriority; b >= 0 && want > 0; b-- {
		var ps, caps []int
		for i := range n {
			p := (first + i) % n
			if c := counts[p][b]; c > 0 {
				ps, caps = append(ps, p), append(caps, c)
			}
		}
		got, left := deal(want, caps)
		for i, g := range got {
			asks[ps[i]] += g
		}
		want = left
	}
	var claims []claim
	for p, a := range asks {
		if a > 0 {
			claims = append(claims, claim{p: p, n: a})
		}
	}
	return claims
}
