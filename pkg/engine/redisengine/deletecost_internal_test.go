package redisengine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/testservers"
)

// commandStats reads INFO commandstats: command -> calls (scripts' inner commands included).
func commandStats(t *testing.T, rdb *redis.Client) map[string]int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				out[strings.TrimPrefix(name, "cmdstat_")], _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return out
}

// TestDeleteUnknownIDCost (issue 31): deleting an unknown id from a queue of 3,000 never-
// received messages read the whole list, payloads included, on every call (delete.lua looked
// through l 1,000 elements a call: 3 LRANGEs copying 3,000 payloads, 4 script calls). Now
// the first such delete moves the list, a page of 100 a call, into the id-indexed hash, and
// every later one is one script call that finds the list empty: its cost no longer grows with
// the queue.
func TestDeleteUnknownIDCost(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	addr := testservers.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	e, err := New(rdb, clk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	q := engine.Queue{ID: ids.New(), Project: ids.New(), Type: engine.Standard, Retention: time.Hour, VisibilityTimeout: time.Minute}
	if err := e.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("x", 1024)
	for range 300 {
		msgs := make([]engine.Message, engine.MaxBatch)
		for i := range msgs {
			msgs[i] = engine.Message{Body: body}
		}
		if _, err := e.Send(ctx, q, msgs); err != nil {
			t.Fatal(err)
		}
	}
	del := func() map[string]int64 {
		t.Helper()
		before := commandStats(t, rdb)
		if err := e.DeleteMessage(ctx, q, ids.New()); !errors.Is(err, engine.ErrNoMessage) {
			t.Fatalf("delete of an unknown id: %v, want not found", err)
		}
		after := commandStats(t, rdb)
		d := map[string]int64{}
		for k, v := range after {
			if n := v - before[k]; n > 0 && k != "info" {
				d[k] = n
			}
		}
		return d
	}
	total := func(d map[string]int64) (n int64) {
		for _, v := range d {
			n += v
		}
		return n
	}
	first := del()
	t.Logf("first delete of an unknown id (3,000 messages of 1 KiB): %d commands, %d script calls, %d LRANGE: %v",
		total(first), first["evalsha"], first["lrange"], first)
	for i := range 5 {
		d := del()
		t.Logf("delete %d of an unknown id: %d commands, %d script calls, %d LRANGE: %v", i+2, total(d), d["evalsha"], d["lrange"], d)
		if d["evalsha"] != 1 {
			t.Fatalf("a later delete of an unknown id made %d script calls, want 1 (one partition)", d["evalsha"])
		}
	}
	if n, _ := rdb.LLen(ctx, keysOf(q.ID, 0).Visible).Result(); n != 0 {
		t.Fatalf("%d messages left in the list, where no id is indexed", n)
	}
	st, err := e.Stats(ctx, q)
	if err != nil || st.Visible != 3000 {
		t.Fatalf("stats after the deletes: %+v %v; want 3,000 visible", st, err)
	}
}
