package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/services/queues/stack"
)

// A replica whose Redis fills up (a small maxmemory, noeviction) pauses sends with 503 and
// Retry-After, and every queue can still be drained to empty: receive, ack, dead-letter moves,
// purge, group purge and queue delete all succeed at full memory, and sends come back once
// the store has room again
// (docs/stored-bytes.md#headroom-of-the-shared-store-queues_redis_send_limit).
func TestFullMemoryDrains(t *testing.T) {
	requireStack(t, "a replica on a small Redis of its own")
	tn := newTenant(t)
	addr, stopRedis, err := testservers.StartRedis(t.Context(), "--maxmemory", "24mb")
	if err != nil {
		t.Fatal(err)
	}
	defer stopRedis()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	srv, closeReplica, err := w.replica(context.Background(), stack.Options{Redis: rdb})
	if err != nil {
		t.Fatal(err)
	}
	defer closeReplica()
	c := newClient(t, srv, tn.token)
	dlq := c.do("POST", "/v1/queues", map[string]any{"name": "full-dlq"}).must(t, 201)
	c.do("POST", "/v1/queues", map[string]any{"name": "full-src",
		"redrive": map[string]any{"deadLetterQueue": dlq.str("slug"), "maxReceiveCount": 5}}).must(t, 201)
	c.do("POST", "/v1/queues", map[string]any{"name": "full-fifo", "type": "fifo"}).must(t, 201)
	c.do("POST", "/v1/queues", map[string]any{"name": "full-purged"}).must(t, 201)

	// Fill: 100 KB messages round the queues until sends are refused.
	body := strings.Repeat("m", 100_000)
	batch := func(fifo bool, n int) map[string]any {
		msgs := make([]any, n)
		for i := range msgs {
			m := map[string]any{"body": body}
			if fifo {
				m["groupId"] = []string{"g1", "g2"}[i%2]
			}
			msgs[i] = m
		}
		return map[string]any{"messages": msgs}
	}
	targets := []string{"full-src", "full-fifo", "full-purged"}
	var refused resp
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("1,000 sends of 1 MB into a 24 MB Redis were never refused")
		}
		q := targets[i%len(targets)]
		r := c.do("POST", "/v1/queues/"+q+"/messages", batch(q == "full-fifo", 10))
		if r.status == 503 {
			refused = r
			break
		}
		r.must(t, 200)
	}
	refused.fails(t, 503, "unavailable", "")
	if refused.header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After: %s", refused.raw)
	}
	// The engine's own high-water mark (sampled once a second) refuses before Redis does.
	deadline := time.Now().Add(10 * time.Second)
	// Its answer is the generic 503 (no internal text), so what shows it is the engine's mark
	// and not Redis's own OOM is that Redis still had room when the send was refused.
	for !(refused.status == 503 && usedMemory(t, rdb) < 24<<20) {
		if time.Now().After(deadline) {
			t.Fatalf("sends never refused by the high-water mark: %s", refused.raw)
		}
		time.Sleep(100 * time.Millisecond) // polling the once-a-second sample
		refused = c.do("POST", "/v1/queues/full-src/messages", batch(false, 1))
		if refused.status != 200 {
			refused.fails(t, 503, "unavailable", "")
		}
	}

	// Now take the store to its very limit: maxmemory down to what is used, so every write
	// that allocates is past it. The drain below must still succeed.
	if err := rdb.ConfigSet(t.Context(), "maxmemory", strconv.FormatInt(usedMemory(t, rdb), 10)).Err(); err != nil {
		t.Fatal(err)
	}
	c.do("POST", "/v1/queues/full-src/messages", batch(false, 1)).fails(t, 503, "unavailable", "")

	// Drain at full memory.
	drain := func(q string, settle func(m map[string]any)) int {
		n := 0
		for {
			ms := c.receive(t, q, map[string]any{"maxMessages": 10, "waitSeconds": 0})
			if len(ms) == 0 {
				return n
			}
			for _, m := range ms {
				settle(m)
				n++
			}
		}
	}
	first := true
	moved := drain("full-src", func(m map[string]any) {
		h := m["receiptHandle"].(string)
		if first { // one dead-letter move, at full memory
			first = false
			c.as("").do("POST", "/v1/receipts/dead-letter", map[string]any{"receiptHandle": h, "reason": "full"}).must(t, 204)
			return
		}
		ack(t, c, h).must(t, 204)
	})
	if moved == 0 {
		t.Fatal("full-src held nothing")
	}
	if n := drain("full-dlq", func(m map[string]any) { ack(t, c, m["receiptHandle"].(string)).must(t, 204) }); n != 1 {
		t.Fatalf("dead-letter queue held %d messages, want the 1 moved", n)
	}
	c.do("DELETE", "/v1/queues/full-fifo/groups/g1", nil).must(t, 204)
	drain("full-fifo", func(m map[string]any) {
		if m["groupId"] != "g2" {
			t.Fatalf("group g1 was purged, received %v", m["groupId"])
		}
		ack(t, c, m["receiptHandle"].(string)).must(t, 204)
	})
	c.do("POST", "/v1/queues/full-purged/purge", nil).must(t, 202)
	for _, q := range []string{"full-src", "full-dlq", "full-fifo", "full-purged"} {
		cs := c.counts(t, q)
		if cs["visible"] != 0.0 || cs["inFlight"] != 0.0 || cs["delayed"] != 0.0 {
			t.Fatalf("%s after the drain: %v", q, cs)
		}
	}
	c.do("DELETE", "/v1/queues/full-purged", nil).must(t, 204)

	// With room again, sends are accepted (the next memory sample reopens them).
	deadline = time.Now().Add(10 * time.Second)
	for {
		r := c.do("POST", "/v1/queues/full-src/messages", batch(false, 1))
		if r.status == 200 {
			break
		}
		r.fails(t, 503, "unavailable", "")
		if time.Now().After(deadline) {
			t.Fatalf("sends still refused after the drain: %s", r.raw)
		}
		time.Sleep(100 * time.Millisecond) // polling the once-a-second sample
	}
}

// usedMemory is Redis's used_memory.
func usedMemory(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	for _, l := range strings.Split(rdb.Info(t.Context(), "memory").Val(), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("used_memory %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}
