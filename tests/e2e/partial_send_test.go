package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/services/queues/stack"
)

// A fifo send whose partitions fail partly answers 200 with the stored messages in `messages`
// and the others in `failed` (unavailable), never 503 for the whole after a partial write.
func TestFIFOSendPartialFailure(t *testing.T) {
	if w.rdb == nil { // not the production stack (no Redis)
		t.Skip("needs the production stack: a replica whose Redis client fails one partition's scripts")
	}
	tn := newTenant(t)
	q := tn.queue(t, "partial", map[string]any{"type": "fifo"})
	qid := q.str("id")
	// Two partitions (the Redis engine's layout: {q:<id>}:p, field n), the second failing.
	if err := w.rdb.HSet(t.Context(), "{q:"+qid+"}:p", "n", 2).Err(); err != nil {
		t.Fatal(err)
	}
	// No retries: the engine then uses this client itself (see redisengine/noretry.go), hooks and all.
	rdb := redis.NewClient(&redis.Options{Addr: w.redisAddr, MaxRetries: -1})
	defer rdb.Close()
	hook := &testservers.FailScripts{Tag: "{q:" + qid + ":1}"}
	hook.On.Store(true)
	rdb.AddHook(hook)
	srv, closeReplica, err := w.replica(context.Background(), stack.Options{Redis: rdb, SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer closeReplica()
	c := newClient(t, srv, tn.token)
	// Ten groups land in both partitions but for a 1 in 512 chance; try a few batches. A
	// batch that landed wholly in the good partition is stored whole, and counts too.
	stored := 0
	for b := range 5 {
		msgs := make([]any, 10)
		for i := range msgs {
			msgs[i] = map[string]any{"body": "m", "groupId": fmt.Sprintf("g%d-%d", b, i)}
		}
		r := c.do("POST", "/v1/queues/partial/messages", map[string]any{"messages": msgs})
		if r.status == 503 { // every group in the failing partition: nothing stored
			continue
		}
		r.must(t, 200)
		sent, failed := r.list("messages"), r.list("failed")
		stored += len(sent)
		if len(failed) == 0 {
			continue
		}
		if len(sent)+len(failed) != 10 || len(sent) == 0 {
			t.Fatalf("answer: %s", r.raw)
		}
		seen := map[float64]bool{}
		for _, m := range sent {
			seen[m["index"].(float64)] = true
		}
		for _, f := range failed {
			i := f["index"].(float64)
			e, _ := f["error"].(map[string]any)
			if seen[i] || e["code"] != "unavailable" {
				t.Fatalf("failed entry %v: %s", f, r.raw)
			}
			seen[i] = true
		}
		if len(seen) != 10 {
			t.Fatalf("indexes: %s", r.raw)
		}
		hook.On.Store(false)
		if n := tn.a.counts(t, "partial")["visible"]; n != float64(stored) {
			t.Fatalf("%v visible messages, want %d (the stored ones)", n, stored)
		}
		return
	}
	t.Fatal("no batch spanned both partitions")
}
