package redisengine

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
)

// Exclusive group policy (engine/grouppolicy.go). A group lives in one partition, so its
// binding does too (rediskeys: gb, gx) and fifo_receive.lua decides and writes bindings in the
// same step as the claim, on Redis Cluster as on one server. Only the consumer's cap spans
// partitions: before a claim on a queue of several partitions, the engine counts the
// consumer's bindings in every partition and gives each claim an allowance of new bindings
// out of the room left, so one receive never passes the cap. (Two receives of the same
// consumer at once on several partitions may pass it by their allowances: a consumer
// normally receives one call at a time.)

// exclusiveScan is how many available groups an exclusive receive looks through at least: the
// groups bound to other consumers are passed over without reading their messages.
const exclusiveScan = 200

// bindArgs are fifo_receive.lua's ARGV 10–13 for claim c: the consumer, the affinity, the cap and
// what the consumer holds elsewhere (other partitions, and the allowances of the claims of
// this receive before c). Sequenced queues pass "" and zeros.
func bindArgs(q engine.Queue, cid string, elsewhere int) []any {
	if !q.Exclusive() || cid == "" {
		return []any{"", 0, 0, 0}
	}
	return []any{cid, q.Affinity().Milliseconds(), q.GroupCap(), elsewhere}
}

// bindElsewhere answers, for each claim, the bindings fifo_receive.lua counts as held elsewhere
// (bindArgs). One partition: none, the script counts its own. Several: every partition's count
// of the consumer's bindings (idle ones not yet pruned included, which errs on the safe side)
// and allowances dealt out to the claims in order.
func (e *Engine) bindElsewhere(ctx context.Context, q engine.Queue, cid string, claims []claim) ([]int, error) {
	out := make([]int, len(claims))
	if !q.Exclusive() || cid == "" {
		return out, nil
	}
	n, err := e.partitions(ctx, q.ID)
	if err != nil || n <= 1 {
		return out, err
	}
	pipe := e.rdb.Pipeline()
	counts := make([]interface{ Val() int64 }, n)
	for p := range n {
		counts[p] = pipe.ZLexCount(ctx, keysOf(q.ID, p).ConsumerBindings, "["+cid+"\x00", "("+cid+"\x01")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, e.wrap(ctx, "receive: count group bindings", err)
	}
	total := 0
	for _, c := range counts {
		total += int(c.Val())
	}
	left := max(q.GroupCap()-total, 0)
	for i, c := range claims {
		allow := min(left, c.n)
		left -= allow
		// The script's room is cap - elsewhere - its own count: exactly allow.
		out[i] = q.GroupCap() - int(counts[c.p].Val()) - allow
	}
	return out, nil
}

// withBindings fills in the consumer each listed group is bound to (a live binding of an
// exclusive queue); parts[i] is the partition of groups[i].
func (e *Engine) withBindings(ctx context.Context, q engine.Queue, groups []engine.Group, parts []int, now int64) error {
	if !q.Exclusive() || len(groups) == 0 {
		return nil
	}
	pipe := e.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(groups))
	for i, g := range groups {
		cmds[i] = pipe.HGet(ctx, keysOf(q.ID, parts[i]).GroupBindings, g.GroupID)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return e.wrap(ctx, "groups: bindings", err)
	}
	cut := now - q.Affinity().Milliseconds()
	for i, c := range cmds {
		owner, last, ok := strings.Cut(c.Val(), "|")
		if at, err := strconv.ParseInt(last, 10, 64); ok && err == nil && at > cut {
			groups[i].ConsumerID = owner
		}
	}
	return nil
}
