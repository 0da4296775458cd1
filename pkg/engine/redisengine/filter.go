package redisengine

import (
	stdcmp "cmp"
	"context"
	"slices"
	"strconv"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
)

// Filtered receives (docs/delivery-options.md#filtered-receive-and-browse). The receive scripts
// match a candidate's attributes before they decide anything about it, so a message that does not
// match is left exactly as it was; the filter travels as one ARGV in the form encodeFilter gives. A
// filtered receive examines at most filter.MaxCandidates candidates in all: it does not share the
// claim lane (whose calls would each spend the bound for all of them) and visits the partitions
// holding visible messages one after another, each with what is left of the bound.

// encodeFilter is the receive scripts' form of f (prelude.lua: fparse): per attribute, in
// name order, "<len>:<name><count>:" then "<len>:<value>" for each value. Lengths are in
// bytes, so any UTF-8 value (':' included) fits. "" is no filter.
func encodeFilter(f *filter.Filter) string {
	if f.Empty() {
		return ""
	}
	var b []byte
	tok := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	for _, name := range f.Names() {
		tok(name)
		values := f.Attributes[name]
		b = strconv.AppendInt(b, int64(len(values)), 10)
		b = append(b, ':')
		for _, v := range values {
			tok(v)
		}
	}
	return string(b)
}

// receiveFiltered claims up to want matching messages of queue q (n partitions), examining
// at most filter.MaxCandidates candidates and reading at most filter.MaxScanBytes of them
// (and one message more): standard queues from the next partition in
// rotation on, fifo queues from the partition with the oldest available head on.
func (e *Engine) receiveFiltered(ctx context.Context, q engine.Queue, req engine.ReceiveRequest, want, n int, now int64) (engine.ReceiveResult, error) {
	if n == 1 {
		res, _, err := e.claimCounted(ctx, q, req, now, []claim{{p: 0, n: want, scan: filter.MaxCandidates, scanBytes: filter.MaxScanBytes}})
		return res, err
	}
	order, nextAt, err := e.filterOrder(ctx, q, n, now)
	if err != nil {
		return engine.ReceiveResult{}, err
	}
	var res engine.ReceiveResult
	budget, bytes := filter.MaxCandidates, filter.MaxScanBytes
	for _, p := range order {
		if budget <= 0 || bytes <= 0 || len(res.Messages) >= want {
			break
		}
		got, seen, err := e.claimCounted(ctx, q, req, now, []claim{{p: p, n: want - len(res.Messages), scan: budget, scanBytes: bytes}})
		if err != nil {
			if len(res.Messages) > 0 {
				break // what was claimed is answered; the failure shows on the next call
			}
			return engine.ReceiveResult{}, err
		}
		budget -= max(seen.n, 1)
		bytes -= seen.bytes
		res.Messages = append(res.Messages, got.Messages...)
		if at := got.NextVisibleAt.UnixMilli(); !got.NextVisibleAt.IsZero() && (nextAt == 0 || at < nextAt) {
			nextAt = at
		}
	}
	if len(res.Messages) == 0 {
		res.NextVisibleAt = timeOrZero(nextAt)
	}
	return res, nil
}

// filterOrder is the partitions of q holding visible messages (fifo: available groups) in
// the order a filtered receive visits them, and, of the others, the earliest time one of
// them has a message visible (0: none), from one pipelined peek.
func (e *Engine) filterOrder(ctx context.Context, q engine.Queue, n int, now int64) ([]int, int64, error) {
	calls := make([]scriptCall, n)
	for p := range n {
		k := keysOf(q.ID, p)
		if q.Type == engine.FIFO {
			calls[p] = scriptCall{fifoPeekScript, []string{k.GroupMessages, k.GroupsAvailable, k.GroupsLocked}, []any{now}}
		} else {
			calls[p] = scriptCall{peekScript, []string{k.Scheduled, k.InFlight, k.Visible}, []any{now}}
		}
	}
	cmds := e.run(ctx, calls)
	first := 0
	if q.Type == engine.Standard {
		first = e.firstPartition(q.ID, n, now)
	}
	type avail struct {
		p      int
		oldest int64 // fifo: the oldest available head's sequence number
	}
	var have []avail
	var nextAt int64
	var firstErr error
	for i := range n {
		p := (first + i) % n
		vals, err := cmds[p].Int64Slice()
		if err != nil || len(vals) < 2 {
			firstErr = cmp(firstErr, e.wrap(ctx, "receive", orBad(err)))
			continue
		}
		next := vals[1]
		if q.Type == engine.FIFO && len(vals) == 3 {
			next = vals[2]
		}
		switch {
		case vals[0] > 0:
			have = append(have, avail{p, vals[1]})
		case next > 0 && (nextAt == 0 || next < nextAt):
			nextAt = next
		}
	}
	if len(have) == 0 && firstErr != nil {
		return nil, 0, firstErr
	}
	if q.Type == engine.FIFO {
		slices.SortStableFunc(have, func(a, b avail) int { return stdcmp.Compare(a.oldest, b.oldest) })
	}
	order := make([]int, len(have))
	for i, h := range have {
		order[i] = h.p
	}
	return order, nextAt, nil
}

// filterBrowseAsk is how many messages a filtered browse reads at least per script call, so
// a page whose candidates mostly do not match takes a few round trips, not one per message.
const filterBrowseAsk = 100
