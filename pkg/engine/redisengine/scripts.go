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
// in ARGV (the engine's clock); no script calls TIME.
//
//go:embed scripts/*.lua
var scriptFiles embed.FS

var (
	sendScript       = loadScript("send")
	receiveScript    = loadScript("receive")
	ackScript        = loadScript("ack")
	visibilityScript = loadScript("visibility")
	deadLetterScript = loadScript("deadletter")
	dlqInsertScript  = loadScript("dlqinsert")
	expireScript     = loadScript("expire")
	countsScript     = loadScript("counts")
	peekScript       = loadScript("peek")
	browseScript     = loadScript("browse")
	browseListScript = loadScript("browselist")
	purgePartScript  = loadScript("purgepart")
	growScript       = loadScript("grow")
	purgeGateScript  = loadScript("purgegate")
	obClearScript    = loadScript("obclear")
	qDeleteScript    = loadScript("qdelete")
	bFoldScript      = loadScript("bfold")
	bReserveScript   = loadScript("breserve")

	// Fifo queues (fifo.go).
	fReserveScript    = loadScript("freserve")
	fSendScript       = loadScript("fsend")
	fVerifyScript     = loadScript("fverify")
	fReceiveScript    = loadScript("freceive")
	fAckScript        = loadScript("fack")
	fVisibilityScript = loadScript("fvisibility")
	fDeadLetterScript = loadScript("fdeadletter")
	fExpireScript     = loadScript("fexpire")
	fPurgeGroupScript = loadScript("fpurgegroup")
	fPeekScript       = loadScript("fpeek")
	fGroupsScript     = loadScript("fgroups")
	fGCScript         = loadScript("fgc")
	fUnmapScript      = loadScript("funmap")
)

func loadScript(name string) *redis.Script {
	prelude, err := scriptFiles.ReadFile("scripts/prelude.lua")
	if err != nil {
		panic(err)
	}
	body, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return redis.NewScript(string(prelude) + "\n" + string(body))
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
