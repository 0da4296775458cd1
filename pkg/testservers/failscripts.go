package testservers

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ErrInjected is the error FailScripts gives the calls it fails.
var ErrInjected = errors.New("testservers: injected failure")

// FailScripts is a go-redis hook that fails, without sending them, the script calls (EVAL,
// EVALSHA) naming a key under one hash tag — one queue partition — while On is set. Add it
// with client.AddHook to make one partition's writes fail while the others succeed.
type FailScripts struct {
	Tag string
	On  atomic.Bool
}

// DialHook passes dialling through.
func (h *FailScripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *FailScripts) hit(cmd redis.Cmder) bool {
	if !h.On.Load() || (cmd.Name() != "evalsha" && cmd.Name() != "eval") {
		return false
	}
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.HasPrefix(s, h.Tag) {
			return true
		}
	}
	return false
}

// ProcessHook fails matching single commands.
func (h *FailScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.hit(cmd) {
			cmd.SetErr(ErrInjected)
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook fails matching commands of a pipeline and sends the rest.
func (h *FailScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var pass []redis.Cmder
		for _, cmd := range cmds {
			if h.hit(cmd) {
				cmd.SetErr(ErrInjected)
				continue
			}
			pass = append(pass, cmd)
		}
		if len(pass) == 0 {
			return nil
		}
		return next(ctx, pass)
	}
}
