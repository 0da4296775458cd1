package redisengine

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
)

// Sends confirmed by replicas.
//
// Redis replicates asynchronously: a primary that dies after answering a send, before its
// replicas received the write, takes the message with it when a replica is promoted. With
// Options.SyncReplicas = n (QUEUES_REDIS_SYNC_REPLICAS), a send is answered only once n
// replicas acknowledged every write the primary made up to the send's script: WAIT n on one
// connection right after a small write of its own (WAIT counts the replication offset of the
// connection's own last write, and the script may have run on another pooled connection; a
// write after the script covers it). A message not confirmed within SyncTimeout fails with
// unavailable (outcome unknown: it is stored on the primary and may be delivered). Only sends
// and topic publishes wait: a lost ack or receive after a failover means a redelivery, not a
// loss, and a copy into a queue replicates in order before its binding's progress.

// DefaultSyncTimeout bounds the wait for replicas.
const DefaultSyncTimeout = time.Second

// confirmReplicated waits for the replicas of every partition res stored to.
func (e *Engine) confirmReplicated(ctx context.Context, q engine.Queue, res []engine.SendResult) ([]engine.SendResult, error) {
	failed := map[int]error{}
	done := map[int]bool{}
	stored := 0
	for _, r := range res {
		if r.Err != nil || done[r.Partition] {
			continue
		}
		done[r.Partition] = true
		if err := e.syncReplicas(ctx, keysOf(q.ID, r.Partition)); err != nil {
			failed[r.Partition] = err
		}
	}
	var last error
	for i, r := range res {
		if r.Err != nil {
			continue
		}
		if err, ok := failed[r.Partition]; ok {
			res[i] = engine.SendResult{Partition: r.Partition, Err: err}
			last = err
			continue
		}
		stored++
	}
	if stored == 0 && last != nil {
		return nil, last
	}
	return res, nil
}

// syncReplicas waits until SyncReplicas replicas hold every write made so far on k's node.
func (e *Engine) syncReplicas(ctx context.Context, k partKeys) error {
	var wait *redis.IntCmd
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k.WaitMarker, "1", time.Minute)
		wait = redis.NewIntCmd(ctx, "wait", e.opts.SyncReplicas, e.opts.SyncTimeout.Milliseconds())
		return p.Process(ctx, wait)
	})
	if err != nil {
		return e.wrap(ctx, "send: waiting for replicas", err)
	}
	if got := wait.Val(); got < int64(e.opts.SyncReplicas) {
		return &engine.Failure{Err: engine.ErrUnavailable, Op: fmt.Sprintf(
			"send: stored, but confirmed by %d of %d replicas within %v; it may still be delivered", got, e.opts.SyncReplicas, e.opts.SyncTimeout)}
	}
	return nil
}
