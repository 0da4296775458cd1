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

// TestMoveInterrupted stops a move after its first step, as a crash of the replica running it
// would: the message is in neither queue's counts, and FinishMoves (a resumed task) or Sweep
// (after the outbox grace) completes it exactly once, keeping its id.
func TestMoveInterrupted(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rdb := redis.NewClient(&redis.Options{Addr: testservers.Redis(t)})
	e, err := New(rdb, clk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	project := ids.New()
	src := engine.Queue{ID: ids.New(), Project: project, Type: engine.Standard, Retention: time.Hour, VisibilityTimeout: time.Minute}
	dst := src
	dst.ID = ids.New()
	for _, q := range []engine.Queue{src, dst} {
		if err := e.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.Send(ctx, src, []engine.Message{{Body: "one"}, {Body: "two"}})
	if err != nil {
		t.Fatal(err)
	}
	// The first step alone, for both messages (one from the list, one released into f).
	got, err := e.Receive(ctx, src, engine.ReceiveRequest{Max: 1, Visibility: time.Second})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("receive: %v %v", got, err)
	}
	clk.Advance(2 * time.Second)
	k := keysOf(src.ID, 0)
	head, _ := rdb.Get(ctx, k.VisibleTaken).Int64()
	args := []any{clk.Now().UnixMilli(), "task"}
	for _, r := range res {
		pos := int64(-1)
		if r.MessageID != got.Messages[0].MessageID {
			pos = head
		}
		args = append(args, string(r.MessageID[:]), pos, destination(&dst))
	}
	vals, err := moveTakeScript.Run(ctx, rdb, e.withBytes(src, k, k.Scheduled, k.InFlight, k.Messages, k.LegacyStates, k.Expiry, k.Visible, k.VisibleTaken, k.MoveOutbox, k.MoveTasks, k.ConflationKeys, k.ConflationKeyOf), args...).Slice()
	if err != nil || len(vals) != 4 {
		t.Fatalf("movetake: %v %v", vals, err)
	}
	counts := func(q engine.Queue) int64 {
		st, err := e.Stats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return st.Visible + st.InFlight + st.Delayed
	}
	if a, b := counts(src), counts(dst); a != 0 || b != 0 {
		t.Fatalf("in transit: source holds %d, destination %d; want 0, 0", a, b)
	}
	if n, _ := e.MovedCount(ctx, src, "task"); n != 2 {
		t.Fatalf("MovedCount = %d, want 2 (counted with the take)", n)
	}
	if b, _ := e.StoredBytes(ctx, project); b != 6 {
		t.Fatalf("stored bytes in transit = %d, want 6", b)
	}
	// Sweep leaves a fresh entry to the replica running the move...
	if err := e.Sweep(ctx, []engine.Queue{src}); err != nil {
		t.Fatal(err)
	}
	if n := counts(dst); n != 0 {
		t.Fatalf("Sweep finished a move within the grace: destination holds %d", n)
	}
	// ...and a resumed task finishes it.
	if err := e.FinishMoves(ctx, src); err != nil {
		t.Fatal(err)
	}
	if err := e.FinishMoves(ctx, src); err != nil { // twice is harmless
		t.Fatal(err)
	}
	rec, err := e.Receive(ctx, dst, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	if err != nil || len(rec.Messages) != 2 {
		t.Fatalf("destination after FinishMoves: %+v %v; want 2 messages", rec.Messages, err)
	}
	for _, m := range rec.Messages {
		if m.ReceiveCount != 1 || (m.MessageID != res[0].MessageID && m.MessageID != res[1].MessageID) {
			t.Fatalf("moved message %+v", m)
		}
	}
	if b, _ := e.StoredBytes(ctx, project); b != 6 {
		t.Fatalf("stored bytes after the move = %d, want 6", b)
	}
	if n, _ := rdb.HLen(ctx, k.MoveOutbox).Result(); n != 0 {
		t.Fatalf("move outbox holds %d entries after FinishMoves", n)
	}
}

// TestMoveSweepFinishes: an interrupted move's entry older than the grace is Sweep's.
func TestMoveSweepFinishes(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rdb := redis.NewClient(&redis.Options{Addr: testservers.Redis(t)})
	e, err := New(rdb, clk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	src := engine.Queue{ID: ids.New(), Type: engine.FIFO, Retention: time.Hour, VisibilityTimeout: time.Minute}
	dst := src
	dst.ID = ids.New()
	res, err := e.Send(ctx, src, []engine.Message{{Body: "g", GroupID: "g"}})
	if err != nil {
		t.Fatal(err)
	}
	k := keysOf(src.ID, 0)
	args := []any{clk.Now().UnixMilli(), e.opts.Channel, src.ID.String(), "task", string(res[0].MessageID[:]), destination(&dst)}
	if err := fifoMoveTakeScript.Run(ctx, rdb, e.withBytes(src, k, append(k.fifo(), k.MoveOutbox, k.MoveTasks)...), args...).Err(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(outboxGrace + time.Second)
	if err := e.Sweep(ctx, []engine.Queue{src}); err != nil {
		t.Fatal(err)
	}
	rec, err := e.Receive(ctx, dst, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	if err != nil || len(rec.Messages) != 1 || rec.Messages[0].MessageID != res[0].MessageID || rec.Messages[0].GroupID != "g" {
		t.Fatalf("destination after Sweep: %+v %v", rec.Messages, err)
	}
}
