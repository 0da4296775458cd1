package redisengine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Consumer backlogs (docs/delivery-options.md#consumers-backlogs-and-fairness). A receive that
// names a consumer runs in three steps around the ordinary receive, whose scripts stay as they are:
//
//  1. consumer_reserve.lua drops the consumer's lapsed holdings and reserves the room left under its
//     bound as placeholders (one script call on the queue's own slot);
//  2. the receive claims at most that many messages;
//  3. consumer_commit.lua replaces the placeholders with the deliveries taken.
//
// The reservation is what keeps the bound under concurrency: two receives of one consumer,
// on any replicas, each take room the other cannot. A replica that dies between 1 and 3
// leaves placeholders that lapse with the visibility timeout, as the messages it took do.
// Settlement learns the consumer from the receipt handle (engine.Delivery.Consumer) and the
// API reports it through Settled (consumer_settle.lua). Cost: two extra round trips per consumer
// receive on the queue's slot, O(batch); none for receives and settlements without a consumer.

// holdLifetime bounds the life of the consumer keys: longer than any holding can last.
var holdLifetime = engine.MaxInFlight + time.Hour

// reserveSlack is how long after the visibility deadline a receive's placeholders lapse.
const reserveSlack = 5 * time.Second

func consumerMember(d engine.Delivery) string {
	return string(d.MessageID[:]) + strconv.FormatUint(uint64(d.Attempt), 10)
}

// receiveAsConsumer is Receive for a named consumer: within its backlog's room.
func (e *Engine) receiveAsConsumer(ctx context.Context, q engine.Queue, req engine.ReceiveRequest) (engine.ReceiveResult, error) {
	c := *req.Consumer
	tag := engine.TagOf(c.ID)
	hold := consumerHoldKey(q.ID, tag)
	now := e.nowMs()
	token := ids.New().String()
	want := min(max(req.Max, 1), engine.MaxBatch)
	vals, err := consumerReserveScript.Run(ctx, e.rdb, []string{hold, consumerRegistryKey(q.ID), consumerNamesKey(q.ID)},
		now, want, c.MaxBacklog, now+(req.Visibility+reserveSlack).Milliseconds(), token, c.ID,
		holdLifetime.Milliseconds()).Int64Slice()
	if err != nil || len(vals) != 2 {
		return engine.ReceiveResult{}, e.wrap(ctx, "reserve backlog", orBadReply(err))
	}
	granted := int(vals[0])
	if granted == 0 {
		return engine.ReceiveResult{BacklogFull: true}, nil
	}
	inner := req
	inner.Consumer, inner.Max, inner.BindTo = nil, granted, c.ID
	res, rerr := e.Receive(ctx, q, inner)
	placeholders := granted
	if c.MaxBacklog <= 0 {
		placeholders = 0
	}
	args := []any{token, placeholders, holdLifetime.Milliseconds()}
	for i := range res.Messages {
		m := &res.Messages[i]
		m.Consumer = tag
		args = append(args, consumerMember(m.Delivery), lapseOf(q, *m).UnixMilli())
	}
	// The commit runs even when the receive failed, to give the room back; it must not be
	// lost with the request's context.
	cctx, cancel := detached(ctx)
	defer cancel()
	if err := consumerCommitScript.Run(cctx, e.rdb, []string{hold}, args...).Err(); err != nil && rerr == nil {
		e.log.Warn("redisengine: recording a consumer's holdings; its placeholders lapse with the deadline",
			"queue", q.ID.String(), "error", err)
	}
	return res, rerr
}

// lapseOf is when a received message stops being held: its deadline, or its expiry if that
// comes first.
func lapseOf(q engine.Queue, m engine.Received) time.Time {
	if exp := m.SentAt.Add(retention(q)); exp.Before(m.VisibilityDeadline) {
		return exp
	}
	return m.VisibilityDeadline
}

func orBadReply(err error) error {
	if err == nil {
		return errBadReply
	}
	return err
}

// Settled moves settled deliveries out of their consumers' holdings (or to their new deadline)
// and wakes the queue's receives, which may have been waiting for room.
func (e *Engine) Settled(ctx context.Context, q engine.Queue, cs []engine.HeldChange) error {
	if len(cs) == 0 {
		return nil
	}
	byTag := map[engine.ConsumerTag][]any{}
	now := e.nowMs()
	for _, c := range cs {
		if c.Delivery.Consumer == 0 {
			continue
		}
		t := c.Delivery.Consumer
		if byTag[t] == nil {
			byTag[t] = []any{now}
		}
		until := int64(0)
		if !c.Until.IsZero() {
			until = c.Until.UnixMilli()
		}
		byTag[t] = append(byTag[t], consumerMember(c.Delivery), until)
	}
	calls := make([]scriptCall, 0, len(byTag))
	for t, args := range byTag {
		calls = append(calls, scriptCall{consumerSettleScript, []string{consumerHoldKey(q.ID, t)}, args})
	}
	for _, cmd := range e.run(ctx, calls) {
		if err := cmd.Err(); err != nil {
			return e.wrap(ctx, "settle holdings", err)
		}
	}
	e.publish(ctx, q.ID)
	return nil
}

// listScan bounds the names one consumer_list.lua call looks at.
const listScan = 1000

// ListConsumers pages through the consumers seen within engine.ConsumerWindow. Consumers
// seen before it and holding nothing are forgotten on the way.
func (e *Engine) ListConsumers(ctx context.Context, q engine.Queue, limit int, cursor string) (engine.ConsumerPage, error) {
	after, err := engine.ParseConsumerCursor(cursor)
	if err != nil {
		return engine.ConsumerPage{}, err
	}
	limit = min(max(limit, 1), engine.MaxConsumersPage)
	now := e.nowMs()
	since := now - engine.ConsumerWindow.Milliseconds()
	var raw []string
	for {
		r, err := e.listStep(ctx, q, after, since, limit-len(raw)/2)
		if err != nil {
			return engine.ConsumerPage{}, err
		}
		raw = append(raw, r.entries...)
		if err := e.forgetStale(ctx, q, now, since, r.stale); err != nil {
			return engine.ConsumerPage{}, err
		}
		if r.more || r.scanned < listScan || len(raw)/2 >= limit {
			page, err := e.withHoldings(ctx, q, now, raw)
			out := engine.ConsumerPage{Consumers: page}
			if r.more && err == nil {
				out.NextCursor = engine.ConsumerCursor(page[len(page)-1].ID)
			}
			return out, err
		}
		after = r.last // the scan bound came first: go on from where it stopped
	}
}

type listStepResult struct {
	more    bool
	last    string
	scanned int
	entries []string // id, "maxBacklog|lastSeenMs", …
	stale   []string
}

func (e *Engine) listStep(ctx context.Context, q engine.Queue, after string, since int64, limit int) (listStepResult, error) {
	v, err := consumerListScript.Run(ctx, e.rdb, []string{consumerRegistryKey(q.ID), consumerNamesKey(q.ID)},
		after, since, limit, listScan).Slice()
	if err != nil || len(v) < 4 {
		return listStepResult{}, e.wrap(ctx, "list consumers", orBadReply(err))
	}
	more, _ := v[0].(int64)
	last, _ := v[1].(string)
	scanned, _ := v[2].(int64)
	r := listStepResult{more: more == 1, last: last, scanned: int(scanned)}
	rest := v[3:]
	for i, x := range rest {
		s, _ := x.(string)
		if s == "" {
			for _, y := range rest[i+1:] {
				id, _ := y.(string)
				r.stale = append(r.stale, id)
			}
			break
		}
		r.entries = append(r.entries, s)
	}
	return r, nil
}

// withHoldings turns consumer_list.lua's entries into consumer states with their holdings counted.
func (e *Engine) withHoldings(ctx context.Context, q engine.Queue, now int64, raw []string) ([]engine.ConsumerState, error) {
	out := make([]engine.ConsumerState, 0, len(raw)/2)
	keys := make([]string, 0, len(raw)/2)
	for i := 0; i+1 < len(raw); i += 2 {
		bound, seen, _ := strings.Cut(raw[i+1], "|")
		b, _ := strconv.Atoi(bound)
		ms, _ := strconv.ParseInt(seen, 10, 64)
		out = append(out, engine.ConsumerState{ID: raw[i], MaxBacklog: b, LastSeen: time.UnixMilli(ms).UTC()})
		keys = append(keys, consumerHoldKey(q.ID, engine.TagOf(raw[i])))
	}
	if len(keys) == 0 {
		return out, nil
	}
	counts, err := consumerCountScript.Run(ctx, e.rdb, keys, now).Int64Slice()
	if err != nil || len(counts) != len(out) {
		return nil, e.wrap(ctx, "count holdings", orBadReply(err))
	}
	for i := range out {
		out[i].InFlight = int(counts[i])
	}
	return out, nil
}

// forgetStale drops stale consumers that hold nothing.
func (e *Engine) forgetStale(ctx context.Context, q engine.Queue, now, since int64, stale []string) error {
	if len(stale) == 0 {
		return nil
	}
	keys := []string{consumerRegistryKey(q.ID), consumerNamesKey(q.ID)}
	args := []any{now, since}
	for _, id := range stale {
		keys = append(keys, consumerHoldKey(q.ID, engine.TagOf(id)))
		args = append(args, id)
	}
	if err := consumerForgetScript.Run(ctx, e.rdb, keys, args...).Err(); err != nil {
		return e.wrap(ctx, "forget consumers", err)
	}
	return nil
}

// consumerKeys are every consumer key of the queue: the registry, the names and each
// registered consumer's holdings.
func (e *Engine) consumerKeys(ctx context.Context, q ids.ID) ([]string, error) {
	names, err := e.rdb.HKeys(ctx, consumerRegistryKey(q)).Result()
	if err != nil {
		return nil, fmt.Errorf("listing consumers: %w", err)
	}
	keys := []string{consumerRegistryKey(q), consumerNamesKey(q)}
	for _, id := range names {
		keys = append(keys, consumerHoldKey(q, engine.TagOf(id)))
	}
	return keys, nil
}

// clearHoldings empties every consumer's holdings (purge: every message any consumer held was
// sent before the purge, so none is held any more), keeping the registry.
func (e *Engine) clearHoldings(ctx context.Context, q ids.ID) error {
	keys, err := e.consumerKeys(ctx, q)
	if err == nil && len(keys) > 2 {
		err = e.rdb.Del(ctx, keys[2:]...).Err()
	}
	if err != nil {
		return e.wrap(ctx, "purge holdings", err)
	}
	return nil
}

// deleteConsumers removes every consumer key of a deleted queue.
func (e *Engine) deleteConsumers(ctx context.Context, q ids.ID) error {
	keys, err := e.consumerKeys(ctx, q)
	if err == nil {
		err = e.rdb.Del(ctx, keys...).Err()
	}
	if err != nil {
		return e.wrap(ctx, "delete consumers", err)
	}
	return nil
}
