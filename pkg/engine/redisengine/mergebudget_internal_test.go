package redisengine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// raceKey is a redis hook that, before each keyed_send.lua call, raises the version of one key's
// waiting message, as a concurrent send of the key would: the send's expectation fails and
// it merges again.
type raceKey struct {
	other *redis.Client // without the hook
	k     string        // the partition's key index
	key   string
	sends atomic.Int64
}

func (h *raceKey) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *raceKey) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.before(ctx, cmd)
		return next(ctx, cmd)
	}
}

func (h *raceKey) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.before(ctx, cmd)
		}
		return next(ctx, cmds)
	}
}

func (h *raceKey) before(ctx context.Context, cmd redis.Cmder) {
	if args := cmd.Args(); cmd.Name() != "evalsha" || len(args) < 2 || args[1] != keyedSendScript.Hash() {
		return
	}
	h.sends.Add(1)
	v, err := h.other.HGet(ctx, h.k, h.key).Result()
	if err != nil || len(v) < 16 {
		return
	}
	ver, _ := strconv.ParseInt(v[16:], 10, 64)
	h.other.HSet(ctx, h.k, h.key, v[:16]+strconv.FormatInt(ver+1, 10))
}

// TestMergeBudget: a patch send whose key keeps changing under it merges again at each try,
// and stops when its merges pass engine.MergeBudgetBytes (refused ErrMergeBudget) instead
// of merging 32 times. Before the budget: 32 writes of 1.2 MB merges (38.4 MB), then
// ErrContended; now 13 (16 MiB), then ErrMergeBudget.
func TestMergeBudget(t *testing.T) {
	t.Parallel()
	e, rdb, _ := newInternal(t)
	q := engine.Queue{ID: ids.New(), Project: ids.New(), Type: engine.Standard, VisibilityTimeout: time.Minute, Retention: time.Hour}
	body := func(v string) string { return `{"a":"` + strings.Repeat(v, 600_000) + `"}` }
	if r := mustSend(t, e, q, engine.Message{Body: body("x"), Key: "K", Merge: engine.MergePatch})[0]; r.Err != nil {
		t.Fatal(r.Err)
	}
	other := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr})
	t.Cleanup(func() { _ = other.Close() })
	hook := &raceKey{other: other, k: keysOf(q.ID, 0).ConflationKeys, key: "K"}
	rdb.AddHook(hook)
	patch := engine.Message{Body: body("y"), Key: "K", Merge: engine.MergePatch}
	r := mustSend(t, e, q, patch)[0]
	perMerge := int64(len(patch.Body) * 2)
	want := engine.MergeBudgetBytes / perMerge
	t.Logf("writes tried: %d (%d bytes a merge), answer %v", hook.sends.Load(), perMerge, r.Err)
	var ref *engine.Refusal
	if !errors.As(r.Err, &ref) || ref.Err != engine.ErrMergeBudget || ref.N <= engine.MergeBudgetBytes {
		t.Fatalf("send under a race every try: %+v, want a Refusal of ErrMergeBudget past %d", r, engine.MergeBudgetBytes)
	}
	if got := hook.sends.Load(); got != want {
		t.Fatalf("%d writes tried, want %d (the budget's worth of merges)", got, want)
	}
	if !engine.MergeRefused(r.Err) {
		t.Fatal("ErrMergeBudget is not a refusal of one message")
	}
}
