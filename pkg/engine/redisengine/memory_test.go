package redisengine_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/testservers"
)

// TestMemoryBeyondBody measures Redis memory per queued message beyond its body: used_memory
// before and after sending N messages (1 KiB bodies, no attributes) to one partition of a
// standard queue, less N bodies. N is 20,000, or $QUEUES_MEMTEST_N (docs/measurements/performance.md's figure uses
// 1,000,000); $QUEUES_MEMTEST_BODY sets the body size. It logs each key's MEMORY USAGE too,
// and fails above 200 bytes beyond the body (the budget; $QUEUES_MEMTEST_LIMIT).
func TestMemoryBeyondBody(t *testing.T) {
	n := envInt(t, "QUEUES_MEMTEST_N", 20_000)
	bodyLen := envInt(t, "QUEUES_MEMTEST_BODY", 1024)
	addr := testservers.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	e := newEngine(t, rdb, clock.Real{}, redisengine.Options{PartitionSendRate: 1 << 30})
	ctx := context.Background()
	q := newQueue(func(q *engine.Queue) { q.Retention = 96 * time.Hour })
	// Warm up (scripts loaded, the queue's keys exist) before the first reading.
	must(e.Send(ctx, q, []engine.Message{{Body: "warm"}}))
	before := usedMemory(t, rdb)
	body := strings.Repeat("x", bodyLen)
	var wg sync.WaitGroup
	per := n / 8
	for w := range 8 {
		count := per
		if w == 7 {
			count = n - 7*per
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sent := 0; sent < count; {
				k := min(10, count-sent)
				msgs := make([]engine.Message, k)
				for i := range msgs {
					msgs[i] = engine.Message{Body: body}
				}
				if _, err := e.Send(ctx, q, msgs); err != nil {
					t.Error(err)
					return
				}
				sent += k
			}
		}()
	}
	wg.Wait()
	after := usedMemory(t, rdb)
	per1 := float64(after-before) / float64(n)
	t.Logf("%d messages of %d bytes: used_memory +%d bytes, %.1f bytes per message, %.1f beyond the body",
		n, bodyLen, after-before, per1, per1-float64(bodyLen))
	keys, err := rdb.Keys(ctx, "{q:"+q.ID.String()+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		u, _ := rdb.MemoryUsage(ctx, k, 0).Result()
		typ, _ := rdb.Type(ctx, k).Result()
		enc, _ := rdb.ObjectEncoding(ctx, k).Result()
		t.Logf("  %-50s %-6s %-10s %12d bytes, %.1f per message", k, typ, enc, u, float64(u)/float64(n))
	}
	if limit := float64(envInt(t, "QUEUES_MEMTEST_LIMIT", 200)); limit > 0 && per1-float64(bodyLen) > limit {
		t.Errorf("%.1f bytes per message beyond the body, want at most %.0f", per1-float64(bodyLen), limit)
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

func usedMemory(t *testing.T, rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no used_memory in INFO memory")
	return 0
}
