package redisengine_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/testservers"
)

func newQueue(opts ...func(*engine.Queue)) engine.Queue {
	q := engine.Queue{ID: ids.New(), Type: engine.Standard, VisibilityTimeout: 30 * time.Second, Retention: 24 * time.Hour}
	for _, o := range opts {
		o(&q)
	}
	return q
}

// must returns v, and panics (failing the test binary) on an unexpected error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestScriptCacheFlushed(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	clk := enginetest.NewClock()
	e := newEngine(t, rdb, clk, redisengine.Options{})
	ctx := context.Background()
	q := newQueue()
	must(e.Send(ctx, q, []engine.Message{{Body: "a"}, {Body: "b"}}))
	// A queue with several partitions takes the pipelined path (EVALSHA in a pipeline).
	multi := newQueue()
	if err := rdb.HSet(ctx, "{q:"+multi.ID.String()+"}:p", "n", 4).Err(); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		must(e.Send(ctx, multi, []engine.Message{{Body: "m"}}))
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	res := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute}))
	if len(res.Messages) != 2 {
		t.Fatalf("received %d after SCRIPT FLUSH, want 2", len(res.Messages))
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	st := must(e.Stats(ctx, multi))
	if st.Visible != 4 || st.Partitions != 4 {
		t.Fatalf("stats after SCRIPT FLUSH: %+v", st)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got := must(e.Receive(ctx, multi, engine.ReceiveRequest{Max: 10, Visibility: time.Minute}))
	if len(got.Messages) != 4 {
		t.Fatalf("received %d of 4 over partitions after SCRIPT FLUSH", len(got.Messages))
	}
}

// TestOutboxRecovery interrupts a dead-letter move between its two steps (the insert into the
// dead-letter queue fails) and lets Sweep finish it, exactly once.
func TestOutboxRecovery(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	clk := enginetest.NewClock()
	e := newEngine(t, rdb, clk, redisengine.Options{})
	ctx := context.Background()
	dlq := newQueue()
	q := newQueue(func(q *engine.Queue) { q.Redrive = &engine.Redrive{DeadLetter: &dlq, MaxReceiveCount: 1} })
	id := must(e.Send(ctx, q, []engine.Message{{Body: "poison", Attributes: map[string]string{"a": "b"}}}))[0].MessageID
	m := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Second})).Messages[0]

	// Break the dead-letter queue's payload hash so the second step fails: the "crash".
	dlqPayloads := "{q:" + dlq.ID.String() + ":0}:m"
	if err := rdb.Set(ctx, dlqPayloads, "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	errs := must(e.DeadLetter(ctx, q, []engine.DeadLetterRequest{{Delivery: m.Delivery, Reason: "bad"}}))
	if errs[0] != nil {
		t.Fatalf("dead-letter: %v (the first step succeeded; the answer must not depend on the second)", errs[0])
	}
	outbox := "{q:" + q.ID.String() + ":0}:o"
	if n := must(rdb.HLen(ctx, outbox).Result()); n != 1 {
		t.Fatalf("outbox holds %d entries, want the interrupted move", n)
	}
	saved := must(rdb.HGetAll(ctx, outbox).Result())
	if st := must(e.Stats(ctx, q)); st.Visible+st.InFlight+st.Delayed != 0 {
		t.Fatalf("source still counts the message: %+v", st)
	}
	if err := rdb.Del(ctx, dlqPayloads).Err(); err != nil {
		t.Fatal(err)
	}

	// A young outbox entry is left to the operation that made it.
	if err := e.Sweep(ctx, []engine.Queue{q, dlq}); err != nil {
		t.Fatal(err)
	}
	if n := must(rdb.HLen(ctx, outbox).Result()); n != 1 {
		t.Fatalf("Sweep finished a move younger than its grace period")
	}
	clk.Advance(time.Minute)
	if err := e.Sweep(ctx, []engine.Queue{q, dlq}); err != nil {
		t.Fatal(err)
	}
	if n := must(rdb.HLen(ctx, outbox).Result()); n != 0 {
		t.Fatalf("outbox holds %d entries after Sweep", n)
	}
	// A crash after the insert but before clearing the outbox: Sweep must not duplicate it.
	for k, v := range saved {
		if err := rdb.HSet(ctx, outbox, k, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Sweep(ctx, []engine.Queue{q, dlq}); err != nil {
		t.Fatal(err)
	}
	st := must(e.Stats(ctx, dlq))
	if st.Visible != 1 || st.InFlight != 0 {
		t.Fatalf("dead-letter queue counts %+v, want the one message once", st)
	}
	got := must(e.Receive(ctx, dlq, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})).Messages
	if len(got) != 1 || got[0].MessageID != id || got[0].Body != "poison" || got[0].Attributes["a"] != "b" ||
		got[0].DeadLetter == nil || got[0].DeadLetter.Reason != "bad" || got[0].DeadLetter.SourceQueue != q.ID {
		t.Fatalf("dead-letter queue holds %+v", got)
	}
}

func TestWatchAcrossEngines(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	clk := enginetest.NewClock()
	a := newEngine(t, redis.NewClient(&redis.Options{Addr: addr}), clk, redisengine.Options{})
	b := newEngine(t, redis.NewClient(&redis.Options{Addr: addr}), clk, redisengine.Options{})
	q, other := newQueue(), newQueue()
	ch, cancel := b.Watch(q.ID)
	defer cancel()
	otherCh, cancelOther := b.Watch(other.ID)
	defer cancelOther()
	ctx := context.Background()
	must(a.Send(ctx, q, []engine.Message{{Body: "x"}}))
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("a send on engine A did not wake a watcher on engine B")
	}
	select {
	case <-otherCh:
		t.Fatal("a watcher of another queue was woken")
	default:
	}
}

func TestWatchAcrossClusterEngines(t *testing.T) {
	t.Parallel()
	addrs := testservers.RedisCluster(t)
	clk := enginetest.NewClock()
	a := newEngine(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}), clk, redisengine.Options{})
	b := newEngine(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs[2:]}), clk, redisengine.Options{})
	ctx := context.Background()
	// Queues whose partitions live on different nodes all reach B's one subscription.
	for range 6 {
		q := newQueue()
		ch, cancel := b.Watch(q.ID)
		must(a.Send(ctx, q, []engine.Message{{Body: "x"}}))
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("a send on engine A did not wake a watcher on engine B")
		}
		cancel()
	}
}

func TestUnavailableAndCancellation(t *testing.T) {
	t.Parallel()
	addr, stop, err := testservers.StartRedis(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	e := newEngine(t, rdb, enginetest.NewClock(), redisengine.Options{})
	q := newQueue()

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Send(canceled, q, []engine.Message{{Body: "x"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("send with a canceled context: %v, want context.Canceled", err)
	}

	stop()
	_, err = e.Send(context.Background(), q, []engine.Message{{Body: "x"}})
	if apierr.CodeOf(err) != apierr.Unavailable || !errors.Is(err, apierr.ErrUnavailable) {
		t.Fatalf("send to a stopped server: %v, want unavailable", err)
	}
	_, err = e.Ack(context.Background(), q, []engine.Delivery{{Queue: q.ID, MessageID: ids.New(), Attempt: 1}})
	if apierr.CodeOf(err) != apierr.Unavailable {
		t.Fatalf("ack on a stopped server: %v, want unavailable", err)
	}
}

// TestMemoryPerMessage measures Redis memory per queued message with 1 KiB bodies.
func TestMemoryPerMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("fills Redis with 10,000 messages")
	}
	t.Parallel()
	addr := testservers.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	e := newEngine(t, rdb, clock.Real{}, redisengine.Options{})
	ctx := context.Background()
	used := func() int64 {
		info := must(rdb.Info(ctx, "memory").Result())
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				return must(strconv.ParseInt(v, 10, 64))
			}
		}
		t.Fatal("no used_memory in INFO memory")
		return 0
	}
	q := newQueue()
	must(e.Send(ctx, q, []engine.Message{{Body: "warm-up"}})) // create the keys
	before := used()
	const n = 10_000
	body := strings.Repeat("x", 1024)
	batch := make([]engine.Message, engine.MaxBatch)
	for i := range batch {
		batch[i] = engine.Message{Body: body}
	}
	for range n / engine.MaxBatch {
		must(e.Send(ctx, q, batch))
	}
	per := float64(used()-before) / n
	t.Logf("Redis used_memory per queued message with a 1 KiB body: %.0f bytes (%d messages)", per, n)
	if per < 1024 || per > 3*1024 {
		t.Fatalf("%.0f bytes per 1 KiB message is outside [1 KiB, 3 KiB]", per)
	}
}

// TestCountsManyExpired: with more expired, unswept messages in a partition than Stats looks
// up one by one, Stats sweeps the queue first, so its counts still leave them all out.
func TestCountsManyExpired(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	clk := enginetest.NewClock()
	e := newEngine(t, rdb, clk, redisengine.Options{})
	ctx := context.Background()
	q := newQueue(func(q *engine.Queue) { q.Retention = time.Minute })
	d := 10 * time.Minute
	batch := make([]engine.Message, 10)
	for i := range batch {
		batch[i] = engine.Message{Body: "delayed", Delay: &d}
	}
	for range 110 { // 1,100 delayed messages, in m and x
		must(e.Send(ctx, q, batch))
	}
	clk.Advance(30 * time.Second)
	must(e.Send(ctx, q, []engine.Message{{Body: "live"}}))
	clk.Advance(31 * time.Second)
	st := must(e.Stats(ctx, q))
	if st.Visible != 1 || st.InFlight != 0 || st.Delayed != 0 || st.Truncated {
		t.Fatalf("stats %+v, want 1 visible", st)
	}
}
