package redisengine

import (
	"context"
	"embed"
	"errors"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts live in scripts/*.lua, each with a contract header (KEYS, ARGV, returns).
// Every script touches only the keys passed in KEYS, all in one partition's hash tag, does its
// reads and checks before its first write, and is O(batch), never O(queue length). Time comes
// in ARGV (the engine's clock); no engine script calls TIME (the pusher's heartbeat does, on
// purpose: pusher/scripts/heartbeat.lua).
//
//go:embed scripts/*.lua
var scriptFiles embed.FS

var (
	sendScript           = loadScript("send")
	receiveScript        = loadDrainScript("receive")
	ackScript            = loadDrainScript("ack")
	visibilityScript     = loadDrainScript("visibility")
	deadLetterScript     = loadDrainScript("deadletter")
	cancelScript         = loadDrainScript("cancel")      // cancel.go
	fifoCancelScript     = loadDrainScript("fifo_cancel") // cancel.go
	insertScript         = loadDrainScript("insert")
	expireScript         = loadDrainScript("expire")
	countsScript         = loadDrainScript("counts")
	peekScript           = loadDrainScript("peek")
	priorityPeekScript   = loadDrainScript("priority_peek") // priority.go
	browseScript         = loadDrainScript("browse")
	browseListScript     = loadDrainScript("browse_list")
	purgePartitionScript = loadDrainScript("purge_partition")
	growScript           = loadScript("grow")
	purgeGateScript      = loadDrainScript("purge_gate")
	outboxClearScript    = loadDrainScript("outbox_clear")
	queueDeleteScript    = loadDrainScript("queue_delete")
	bytesFoldScript      = loadDrainScript("bytes_fold")
	bytesReserveScript   = loadScript("bytes_reserve")
	touchScript          = loadDrainScript("touch")
	retireScript         = loadDrainScript("retire")
	moveTakeScript       = loadDrainScript("move_take")      // move.go
	fifoMoveTakeScript   = loadDrainScript("fifo_move_take") // move.go

	// Conflation and delete by id (conflate.go).
	keyedReadScript  = loadDrainScript("keyed_read")
	keyedSendScript  = loadScript("keyed_send")
	deleteScript     = loadDrainScript("delete")
	fifoDeleteScript = loadDrainScript("fifo_delete")
	// Barrier messages (barrier.go). The hold takes sends, so it is refused at full memory
	// like them; the step and purge move or remove messages and run at full memory.
	barrierHoldScript       = loadScript("barrier_hold")
	barrierFenceScript      = loadDrainScript("barrier_fence")
	barrierUnfenceScript    = loadDrainScript("barrier_unfence")
	barrierStepScript       = loadDrainScript("barrier_step")
	barrierHoldPurgeScript  = loadDrainScript("barrier_hold_purge")
	barrierHoldBrowseScript = loadDrainScript("barrier_hold_browse")

	// Consumer backlogs (consumers.go): they take no memory a drain would not free, except
	// the reservation, which a receive at full memory must still make.
	consumerReserveScript = loadDrainScript("consumer_reserve")
	consumerCommitScript  = loadDrainScript("consumer_commit")
	consumerSettleScript  = loadDrainScript("consumer_settle")
	consumerListScript    = loadDrainScript("consumer_list")
	consumerForgetScript  = loadDrainScript("consumer_forget")
	consumerCountScript   = loadDrainScript("consumer_count")

	// Fifo queues (fifo.go).
	fifoReserveScript      = loadScript("fifo_reserve")
	fifoSendScript         = loadScript("fifo_send")
	fifoVerifyDedupScript  = loadDrainScript("fifo_verify_dedup")
	fifoReceiveScript      = loadDrainScript("fifo_receive")
	fifoAckScript          = loadDrainScript("fifo_ack")
	fifoVisibilityScript   = loadDrainScript("fifo_visibility")
	fifoDeadLetterScript   = loadDrainScript("fifo_deadletter")
	fifoExpireScript       = loadDrainScript("fifo_expire")
	fifoPurgeGroupScript   = loadDrainScript("fifo_purge_group")
	fifoPeekScript         = loadDrainScript("fifo_peek")
	fifoGroupsScript       = loadDrainScript("fifo_groups")
	fifoForgetGroupsScript = loadDrainScript("fifo_forget_groups")
	fifoUnmapGroupsScript  = loadDrainScript("fifo_unmap_groups")
	fifoReleaseGroupScript = loadDrainScript("fifo_release_group")

	// The two steps of a dead-letter move into a fifo queue: the send scripts, allowed to
	// run at full memory like every step of a drain.
	fifoReserveMoveScript = loadDrainScript("fifo_reserve")
	fifoSendMoveScript    = loadDrainScript("fifo_send")

	// Topics (topics.go, topicbind.go, copy.go): the publish and the copy take memory like a
	// send; trims, reads and bookkeeping run at full memory.
	topicPublishScript = loadScript("topic_publish")
	copyScript         = loadScript("copy")
	topicTrimScript    = loadDrainScript("topic_trim")
	topicSeqAtScript   = loadDrainScript("topic_seq_at")
	topicLeaseScript   = loadDrainScript("topic_lease")
	topicReleaseScript = loadDrainScript("topic_release")
	topicAdvanceScript = loadDrainScript("topic_advance")
	topicFilterScript  = loadDrainScript("topic_filter")
	topicIdleScript    = loadDrainScript("topic_idle")
	topicActiveScript  = loadDrainScript("topic_active")
)

// allowOOM is the shebang of the scripts that must run when Redis is at its maxmemory
// (docs/stored-bytes.md#headroom-of-the-shared-store-queues_redis_send_limit's headroom: receive,
// every settlement, purge, group purge, delete, sweeps and reads keep working at full memory, so
// every queue can be drained). Without it Redis refuses a script's first write that may allocate.
// Sends are refused first by the engine's own high-water mark (headroom.go) and by Redis at
// maxmemory.
const allowOOM = "#!lua flags=allow-oom\n"

// loadDrainScript is loadScript for a script that runs at full memory.
func loadDrainScript(name string) *redis.Script { return load(allowOOM, name) }

func loadScript(name string) *redis.Script { return load("", name) }

// preludeDefs is prelude.lua's definitions, of which each script gets the ones it uses
// (prelude.go).
var preludeDefs = func() []preludeDef {
	prelude, err := scriptFiles.ReadFile("scripts/prelude.lua")
	if err != nil {
		panic(err)
	}
	return parsePrelude(string(prelude))
}()

func load(shebang, name string) *redis.Script {
	body, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	sc := redis.NewScript(shebang + preludeFor(preludeDefs, string(body)) + "\n" + string(body))
	scriptNames[sc.Hash()] = name // for tracing (tracing.go)
	return sc
}

// scriptCall is one script invocation.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
}

// run runs the calls, pipelined when there are several, and returns their commands in order.
// EVALSHA comes first; calls answered NOSCRIPT (script cache flushed, restart, failover) are
// sent again with their bodies by EVAL. Errors are left in the commands.
func (e *Engine) run(ctx context.Context, calls []scriptCall) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 1 {
		c := calls[0]
		cmds[0] = c.script.Run(ctx, e.rdb, c.keys, c.args...)
		return cmds
	}
	_, _ = e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range calls {
			cmds[i] = c.script.EvalSha(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	var retry []int
	for i, cmd := range cmds {
		if isNoScript(cmd.Err()) {
			retry = append(retry, i)
		}
	}
	if len(retry) > 0 {
		_, _ = e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range retry {
				c := calls[i]
				cmds[i] = c.script.Eval(ctx, p, c.keys, c.args...)
			}
			return nil
		})
	}
	return cmds
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}
