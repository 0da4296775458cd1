package redisengine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/testservers"
)

// TestPayloadBaseRoundTrip: the attempt base survives encoding, with and without dead-letter
// information, and a payload without one decodes to 0.
func TestPayloadBaseRoundTrip(t *testing.T) {
	dl := &engine.DeadLetterInfo{SourceQueue: ids.New(), Reason: "r", At: time.UnixMilli(5).UTC()}
	for _, p := range []payload{{Body: "b"}, {Body: "b", Base: 7}, {Body: "b", Base: 1<<32 - 1, DeadLetter: dl}} {
		got, err := decodePayload(string(p.encode()))
		if err != nil || got.Base != p.Base || got.Body != p.Body {
			t.Fatalf("round trip of %+v: %+v, %v", p, got, err)
		}
	}
}

// TestOldOutboxEntryJumps: a move's outbox entry left by a version before attempt bases (its
// payload has none, and its message's attempts are unknown) arrives with its attempts jumped
// by engine.DeliveryJump, past any handle of the message's earlier lives.
func TestOldOutboxEntryJumps(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rdb := redis.NewClient(&redis.Options{Addr: testservers.Redis(t)})
	e, err := New(rdb, clk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	src := engine.Queue{ID: ids.New(), Project: ids.New(), Type: engine.Standard, Retention: time.Hour, VisibilityTimeout: time.Minute}
	dst := src
	dst.ID = ids.New()
	for _, q := range []engine.Queue{src, dst} {
		if err := e.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	id := ids.New()
	pl := payload{Body: "old"}
	reason := destination(&dst)
	now := clk.Now().UnixMilli()
	entry := fmt.Sprintf("1|%d|%d|%d|", now, now, len(reason)) + reason + string(pl.encode())
	if err := rdb.HSet(ctx, keysOf(src.ID, 0).MoveOutbox, string(id[:]), entry).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.FinishMoves(ctx, src); err != nil {
		t.Fatal(err)
	}
	got, err := e.Receive(ctx, dst, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("receive: %+v %v", got, err)
	}
	m := got.Messages[0]
	if m.MessageID != id || m.ReceiveCount != 1 || m.Attempt != engine.DeliveryJump+1 {
		t.Fatalf("moved by an older version: id %s receiveCount %d attempt %d; want %s, 1, %d",
			m.MessageID, m.ReceiveCount, m.Attempt, id, engine.DeliveryJump+1)
	}
}
