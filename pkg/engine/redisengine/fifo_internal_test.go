package redisengine

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/testservers"
)

func newInternal(t *testing.T) (*Engine, *redis.Client, *clock.Fake) {
	t.Helper()
	// No retries: the engine then uses this client itself, so hooks added to it apply.
	rdb := redis.NewClient(&redis.Options{Addr: testservers.Redis(t), MaxRetries: -1})
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	e, err := New(rdb, clk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(); _ = rdb.Close() })
	return e, rdb, clk
}

func fifoQueue() engine.Queue {
	return engine.Queue{ID: ids.New(), Type: engine.FIFO, VisibilityTimeout: time.Minute, Retention: time.Hour}
}

// pending makes a reservation the way a send's first step does, and stops there: the sender
// "crashed" between its two steps.
func pending(t *testing.T, e *Engine, q engine.Queue, group, dedup string) *fitem {
	t.Helper()
	now := e.nowMs()
	it := &fitem{id: ids.New(), dedup: dedup, mode: "n", visible: now, expires: now + time.Hour.Milliseconds(), sent: now,
		pl: payload{Body: "crashed", GroupID: group}}
	writes, verify, err := e.reserve(context.Background(), q, []*fitem{it}, now)
	if err != nil || len(writes) != 1 || len(verify) != 0 {
		t.Fatalf("reserve: %v (%d to write, %d to verify)", err, len(writes), len(verify))
	}
	return it
}

// store runs a send's second step for an item reserved by pending; it returns fifo_send's code.
func store(t *testing.T, e *Engine, q engine.Queue, it *fitem) int64 {
	t.Helper()
	k := keysOf(q.ID, it.p)
	now := e.nowMs()
	it.pl.Sequence = it.seq
	vals, err := fifoSendScript.Run(context.Background(), e.rdb,
		e.withBytes(q, k, k.Scheduled, k.Messages, k.LegacyStates, k.Expiry, k.Rate(now/1000), k.GroupMessages, k.GroupMemberOf, k.GroupsAvailable, k.GroupsLocked, k.GroupLastSeq, k.DedupOutcomes, k.InFlight, k.GroupsParked),
		now, e.opts.Channel, q.ID.String(), 0, 0, q.Project.String(), string(it.id[:]), it.pl.encode(), it.visible, it.expires, it.sent,
		groupPrefix(it.pl.GroupID, it.seq), it.seq, "1").Slice()
	if err != nil {
		t.Fatal(err)
	}
	return vals[1].([]any)[0].(int64)
}

func mustSend(t *testing.T, e *Engine, q engine.Queue, msgs ...engine.Message) []engine.SendResult {
	t.Helper()
	res, err := e.Send(context.Background(), q, msgs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func receiveBodies(t *testing.T, e *Engine, q engine.Queue) []string {
	t.Helper()
	res, err := e.Receive(context.Background(), q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range res.Messages {
		out = append(out, m.Body)
	}
	return out
}

// TestDedupCrashBetweenSteps: a reservation whose message was never stored must never answer
// "duplicate"; the next send with the dedup id fences it, takes it over and is stored, and
// the crashed sender's store, should it arrive after all, is refused.
func TestDedupCrashBetweenSteps(t *testing.T) {
	t.Parallel()
	e, _, _ := newInternal(t)
	q := fifoQueue()
	crashed := pending(t, e, q, "g", "d1")

	r := mustSend(t, e, q, engine.Message{Body: "second", GroupID: "g", DedupID: "d1"})[0]
	if r.Duplicate || r.MessageID == crashed.id {
		t.Fatalf("send after a crashed reservation: %+v (the crashed message %s was never stored)", r, crashed.id)
	}
	if code := store(t, e, q, crashed); code != 2 {
		t.Fatalf("the crashed sender's late store answered %d, want 2 (fenced)", code)
	}
	again := mustSend(t, e, q, engine.Message{Body: "third", GroupID: "h", DedupID: "d1"})[0]
	if !again.Duplicate || again.MessageID != r.MessageID {
		t.Fatalf("third send %+v, want a duplicate of %s", again, r.MessageID)
	}
	if got := receiveBodies(t, e, q); len(got) != 1 || got[0] != "second" {
		t.Fatalf("queue holds %q, want only the second send", got)
	}
}

// TestDedupCrashAfterStore: a sender that stored its message and died before answering left a
// reservation that is a valid duplicate answer.
func TestDedupCrashAfterStore(t *testing.T) {
	t.Parallel()
	e, _, _ := newInternal(t)
	q := fifoQueue()
	first := pending(t, e, q, "g", "d1")
	if code := store(t, e, q, first); code != 1 {
		t.Fatalf("store answered %d", code)
	}
	r := mustSend(t, e, q, engine.Message{Body: "retry", GroupID: "g", DedupID: "d1"})[0]
	if !r.Duplicate || r.MessageID != first.id {
		t.Fatalf("retry of a stored send: %+v, want a duplicate of %s", r, first.id)
	}
	if got := receiveBodies(t, e, q); len(got) != 1 || got[0] != "crashed" {
		t.Fatalf("queue holds %q", got)
	}
}

// TestLateSequenceNumber: a send that took its sequence number before a concurrent send to the
// same group, but reaches the partition after it, is refused there and goes round again with
// a fresh number, so the group's order is its sequence order.
func TestLateSequenceNumber(t *testing.T) {
	t.Parallel()
	e, _, _ := newInternal(t)
	q := fifoQueue()
	late := pending(t, e, q, "g", "")
	mustSend(t, e, q, engine.Message{Body: "early", GroupID: "g"})
	if code := store(t, e, q, late); code != 3 {
		t.Fatalf("a late store with a lower sequence number answered %d, want 3", code)
	}
	late.mode = "r"
	if _, err := e.storeFIFO(context.Background(), q, []*fitem{late}, e.nowMs()); err != nil {
		t.Fatal(err)
	}
	res, err := e.Receive(context.Background(), q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 2 || res.Messages[0].Body != "early" || res.Messages[1].Body != "crashed" ||
		res.Messages[1].SequenceNumber <= res.Messages[0].SequenceNumber {
		t.Fatalf("received %+v", res.Messages)
	}
}

// TestGroupMappingSweep: a group keeps its partition while it has messages; Sweep forgets the
// mapping (and the partition's sequence mark) of a group empty for the grace period.
func TestGroupMappingSweep(t *testing.T) {
	t.Parallel()
	e, rdb, clk := newInternal(t)
	ctx := context.Background()
	q := fifoQueue()
	mustSend(t, e, q, engine.Message{Body: "a", GroupID: "g"}, engine.Message{Body: "b", GroupID: "h"})
	res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	if err != nil || len(res.Messages) != 2 {
		t.Fatalf("receive: %v, %d", err, len(res.Messages))
	}
	if _, err := e.Ack(ctx, q, []engine.Delivery{res.Messages[0].Delivery}); err != nil { // g empties; h does not
		t.Fatal(err)
	}
	clk.Advance(mappingGrace / 2)
	if err := e.Sweep(ctx, []engine.Queue{q}); err != nil {
		t.Fatal(err)
	}
	if n := rdb.HLen(ctx, groupMapKey(q.ID)).Val(); n != 2 {
		t.Fatalf("%d mappings after a sweep within the grace period, want 2", n)
	}
	clk.Advance(mappingGrace)
	if err := e.Sweep(ctx, []engine.Queue{q}); err != nil {
		t.Fatal(err)
	}
	m := rdb.HGetAll(ctx, groupMapKey(q.ID)).Val()
	if _, ok := m["h"]; len(m) != 1 || !ok {
		t.Fatalf("mappings after the grace period: %v, want only h (it has a message in flight)", m)
	}
	if rdb.HExists(ctx, keysOf(q.ID, 0).GroupLastSeq, "g").Val() || !rdb.HExists(ctx, keysOf(q.ID, 0).GroupLastSeq, "h").Val() {
		t.Fatal("sequence marks: want g's dropped and h's kept")
	}
	// g comes back as a new group, after h's message (back from its deadline: older head).
	mustSend(t, e, q, engine.Message{Body: "c", GroupID: "g"})
	if got := receiveBodies(t, e, q); len(got) != 2 || got[0] != "b" || got[1] != "c" {
		t.Fatalf("received %q", got)
	}
}

// TestFIFOKeysShareSlot: the queue-level fifo keys share the queue's slot, whatever the dedup
// id holds (braces included).
func TestFIFOKeysShareSlot(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testservers.RedisCluster(t)})
	defer rdb.Close()
	ctx := context.Background()
	q := ids.New()
	want := rdb.ClusterKeySlot(ctx, partitionsKey(q)).Val()
	for _, k := range []string{seqKey(q), groupMapKey(q), dedupKey(q, "{x}"), dedupKey(q, "}{"), dedupKey(q, "~")} {
		if got := rdb.ClusterKeySlot(ctx, k).Val(); got != want {
			t.Fatalf("%s is in slot %d, the queue's keys in %d", k, got, want)
		}
	}
}
