package redisengine

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Active queues: the sweeper sweeps the queues of {active}:queues instead of listing every
// queue of every project each round. A send (and a dead-letter move's insert) names its queue
// there before storing, at most once per touchEvery per queue per Engine; Sweep removes a
// queue it finds empty whose entry is older than retireAfter, and only if no send named it
// since (retire.lua). That is safe: a send in this Engine's last touchEvery would have named it
// again, and an earlier send finished before the emptiness check began.
const (
	touchEvery  = 30 * time.Second
	retireAfter = 2 * touchEvery
)

// touch names q in the active set unless this Engine did within touchEvery (engine clock).
func (e *Engine) touch(ctx context.Context, q ids.ID) error {
	now := e.nowMs()
	e.pmu.Lock()
	last, ok := e.touched[q]
	fresh := ok && now-last < touchEvery.Milliseconds() && now >= last
	if !fresh {
		e.touched[q] = now
	}
	e.pmu.Unlock()
	if fresh {
		return nil
	}
	if err := touchScript.Run(ctx, e.rdb, []string{activeKey}, now, q.String()).Err(); err != nil {
		e.pmu.Lock()
		delete(e.touched, q)
		e.pmu.Unlock()
		return e.wrap(ctx, "send", err)
	}
	return nil
}

// ActiveQueues lists the queues that may hold messages.
func (e *Engine) ActiveQueues(ctx context.Context) ([]ids.ID, error) {
	vals, err := e.rdb.ZRange(ctx, activeKey, 0, -1).Result()
	if err != nil {
		return nil, e.wrap(ctx, "active queues", err)
	}
	out := make([]ids.ID, 0, len(vals))
	for _, v := range vals {
		if id, err := ids.ParseUUID(v); err == nil {
			out = append(out, id)
		}
	}
	return out, nil
}

// retire removes q from the active set when it holds nothing (no message, outbox entry, fifo
// group mapping or dedup outcome in any of its n partitions) and was not named for retireAfter.
func (e *Engine) retire(ctx context.Context, q engine.Queue, n int) error {
	score, err := e.rdb.ZScore(ctx, activeKey, q.ID.String()).Result()
	if err == redis.Nil {
		return nil
	}
	if err != nil {
		return e.wrap(ctx, "sweep", err)
	}
	if int64(score) > e.nowMs()-retireAfter.Milliseconds() {
		return nil
	}
	var cmds []*redis.IntCmd
	if _, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			k := keysOf(q.ID, i)
			cmds = append(cmds, p.LLen(ctx, k.Visible), p.HLen(ctx, k.Messages), p.HLen(ctx, k.DeadLetterOutbox), p.HLen(ctx, k.MoveOutbox), p.ZCard(ctx, k.DedupOutcomes))
		}
		cmds = append(cmds, p.HLen(ctx, groupMapKey(q.ID)), p.LLen(ctx, holdKey(q.ID)))
		return nil
	}); err != nil {
		return e.wrap(ctx, "sweep", err)
	}
	for _, c := range cmds {
		if c.Val() > 0 {
			return nil
		}
	}
	return retireScript.Run(ctx, e.rdb, []string{activeKey}, q.ID.String(), strconv.FormatInt(int64(score), 10)).Err()
}

// forget removes a deleted queue from the active set.
func (e *Engine) forget(ctx context.Context, q ids.ID) {
	e.pmu.Lock()
	delete(e.touched, q)
	e.pmu.Unlock()
	if err := e.rdb.ZRem(ctx, activeKey, q.String()).Err(); err != nil {
		e.log.Warn("redisengine: forgetting a deleted queue's activity failed; the sweeper retries", "queue", q.String(), "error", err)
	}
}
