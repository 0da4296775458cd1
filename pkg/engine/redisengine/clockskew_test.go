package redisengine_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/testservers"
)

// TestClockSkewRefusesToServe: a replica whose clock is 60 s ahead of Redis's neither
// redelivers an in-flight message early nor unlocks a fifo group whose batch is out: it
// refuses every timed operation until its clock is back within the bound, while a replica
// with a good clock serves. A clock that jumps after start is caught by the periodic check.
func TestClockSkewRefusesToServe(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	opts := redisengine.Options{MaxClockSkew: time.Second, ClockCheckEvery: 20 * time.Millisecond}
	goodClock := clock.NewSkewed(clock.Real{}, 0)
	good := newEngine(t, redis.NewClient(&redis.Options{Addr: addr}), goodClock, opts)
	ahead := clock.NewSkewed(clock.Real{}, time.Minute)
	skewed := newEngine(t, redis.NewClient(&redis.Options{Addr: addr}), ahead, opts)
	ctx := context.Background()
	if good.ClockErr() != nil || skewed.ClockErr() == nil {
		t.Fatalf("clock verdicts: good %v, skewed %v", good.ClockErr(), skewed.ClockErr())
	}
	std := newQueue()
	fifo := newQueue(func(q *engine.Queue) { q.Type = engine.FIFO })
	must(good.Send(ctx, std, []engine.Message{{Body: "s"}}))
	must(good.Send(ctx, fifo, []engine.Message{{Body: "f1", GroupID: "g"}, {Body: "f2", GroupID: "g"}}))
	for _, q := range []engine.Queue{std, fifo} {
		res := must(good.Receive(ctx, q, engine.ReceiveRequest{Max: 1, Visibility: 30 * time.Second}))
		if len(res.Messages) != 1 {
			t.Fatalf("%s: received %d, want 1", q.Type, len(res.Messages))
		}
		_, err := skewed.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: 30 * time.Second})
		if apierr.CodeOf(err) != apierr.Unavailable {
			t.Fatalf("%s: receive on the replica 60 s ahead: %v, want unavailable (no early redelivery)", q.Type, err)
		}
		if _, err := skewed.Send(ctx, q, []engine.Message{{Body: "x", GroupID: "h"}}); apierr.CodeOf(err) != apierr.Unavailable {
			t.Fatalf("%s: send on the skewed replica: %v, want unavailable", q.Type, err)
		}
	}
	// Corrected: it serves again, and finds nothing due (the messages are still in flight,
	// the group still locked).
	ahead.Set(0)
	await(t, "the corrected clock accepted", func() bool { return skewed.ClockErr() == nil })
	for _, q := range []engine.Queue{std, fifo} {
		if res := must(skewed.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})); len(res.Messages) != 0 {
			t.Fatalf("%s: %d delivered early", q.Type, len(res.Messages))
		}
	}
	// A jump after start is caught by the next check.
	goodClock.Set(-time.Minute)
	await(t, "the jump detected", func() bool { return good.ClockErr() != nil })
	if _, err := good.Receive(ctx, std, engine.ReceiveRequest{Max: 1, Visibility: time.Minute}); apierr.CodeOf(err) != apierr.Unavailable {
		t.Fatalf("receive after the clock jumped: %v", err)
	}
}

// await polls cond (a background check's verdict) for up to 10 s.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
