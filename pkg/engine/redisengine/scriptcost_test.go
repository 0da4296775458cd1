package redisengine_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/testservers"
)

// BenchmarkScriptCost measures what the hot path's scripts cost Redis itself: the time
// SLOWLOG records for each script (execution only, no network; the median call times the
// calls), in µs per message, for
// the e2e shape of docs/performance.md (64-byte bodies; sends of 10, receives of up to 10
// from a short backlog, acks of each receive). It reports send-us/msg, receive-us/msg and
// ack-us/msg; run it with -benchtime=2000x or more.
func BenchmarkScriptCost(b *testing.B) {
	addr := testservers.Redis(b)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	e := newEngine(b, rdb, clock.Real{}, redisengine.Options{})
	ctx := context.Background()
	q := engine.Queue{ID: ids.New(), Project: ids.New(), Type: engine.Standard, VisibilityTimeout: time.Minute, Retention: time.Hour}
	if err := e.CreateQueue(ctx, q); err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("x", 64)
	msgs := make([]engine.Message, 10)
	for i := range msgs {
		msgs[i] = engine.Message{Body: body}
	}
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(admin.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	must(admin.ConfigSet(ctx, "slowlog-max-len", "1000000").Err())
	must(admin.Do(ctx, "SLOWLOG", "RESET").Err())
	sent := 0
	for b.Loop() {
		if _, err := e.Send(ctx, q, msgs); err != nil {
			b.Fatal(err)
		}
		sent += len(msgs)
		res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		ds := make([]engine.Delivery, len(res.Messages))
		for i, m := range res.Messages {
			ds[i] = m.Delivery
		}
		if _, err := e.Ack(ctx, q, ds); err != nil {
			b.Fatal(err)
		}
	}
	logs, err := admin.SlowLogGet(ctx, -1).Result()
	must(err)
	names := redisengine.ScriptNames()
	// The median call, times the calls: a call that waited for the CPU (the load generator
	// and Redis share this machine's) does not count more than a typical one.
	calls := map[string][]time.Duration{}
	for _, l := range logs {
		if len(l.Args) < 2 || !strings.EqualFold(l.Args[0], "evalsha") {
			continue
		}
		calls[names[l.Args[1]]] = append(calls[names[l.Args[1]]], l.Duration)
	}
	for _, s := range []string{"send", "receive", "ack"} {
		d := calls[s]
		if len(d) == 0 {
			b.Fatalf("SLOWLOG holds no %s call", s)
		}
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3*float64(len(d))/float64(sent), s+"-us/msg")
	}
}
