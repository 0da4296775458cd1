package redisengine

import (
	"context"
	"fmt"
	"testing"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/testservers"
)

// TestFIFOSendPartialFailure: a fifo send spanning two partitions, one of whose scripts
// fails, answers per message: the other partition's messages are stored and reported, the
// failed partition's carry Err and are not stored. When every partition fails, the send
// fails whole.
func TestFIFOSendPartialFailure(t *testing.T) {
	t.Parallel()
	e, rdb, _ := newInternal(t)
	ctx := context.Background()
	q := fifoQueue()
	if err := rdb.HSet(ctx, partitionsKey(q.ID), "n", 2).Err(); err != nil {
		t.Fatal(err)
	}
	// Map groups to partitions with first sends, and find one group in each.
	groupIn := map[int]string{}
	firsts := 0
	for b := 0; b < 5 && (groupIn[0] == "" || groupIn[1] == ""); b++ {
		var first []engine.Message
		for g := range 10 {
			first = append(first, engine.Message{Body: "first", GroupID: fmt.Sprintf("g%d-%d", b, g)})
		}
		for i, r := range mustSend(t, e, q, first...) {
			groupIn[r.Partition] = first[i].GroupID
		}
		firsts += len(first)
	}
	if groupIn[0] == "" || groupIn[1] == "" {
		t.Fatalf("the groups all landed in one partition: %v", groupIn)
	}

	hook := &testservers.FailScripts{Tag: keysOf(q.ID, 1).Tag}
	hook.On.Store(true)
	rdb.AddHook(hook)
	res, err := e.Send(ctx, q, []engine.Message{
		{Body: "ok", GroupID: groupIn[0], DedupID: "d-ok"},
		{Body: "lost", GroupID: groupIn[1], DedupID: "d-lost"},
		{Body: "ok too", GroupID: groupIn[0]},
	})
	if err != nil {
		t.Fatalf("send with one partition failing: %v, want per-message results", err)
	}
	if len(res) != 3 {
		t.Fatalf("%d results, want 3", len(res))
	}
	for _, i := range []int{0, 2} {
		if r := res[i]; r.Err != nil || r.Partition != 0 || r.MessageID.IsZero() {
			t.Fatalf("result %d: %+v, want stored in partition 0", i, r)
		}
	}
	if r := res[1]; r.Err == nil || !r.MessageID.IsZero() {
		t.Fatalf("result 1: %+v, want an error (its partition failed)", r)
	}
	hook.On.Store(false)
	st, err := e.Stats(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Visible + st.InFlight + st.Delayed; got != int64(firsts)+2 {
		t.Fatalf("%d messages stored, want %d", got, firsts+2)
	}

	// A retry of the failed message with its dedup id stores it (it never was).
	if r := mustSend(t, e, q, engine.Message{Body: "lost", GroupID: groupIn[1], DedupID: "d-lost"})[0]; r.Duplicate || r.Partition != 1 {
		t.Fatalf("retry of the failed message: %+v, want stored in partition 1", r)
	}

	// Only the failing partition: nothing stored, so the send fails whole.
	hook.On.Store(true)
	if res, err := e.Send(ctx, q, []engine.Message{{Body: "lost again", GroupID: groupIn[1]}}); err == nil {
		t.Fatalf("send to the failing partition only: %+v, want an error", res)
	}
}
