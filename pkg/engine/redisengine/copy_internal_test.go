package redisengine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// TestCopyFIFOAfterCrashedReservation: a fifo Copy whose earlier attempt crashed between the
// dedup reservation and the store (the reservation names the copy's own id, never stored)
// is stored by the next attempt, once, and not refused until the dedup window ends.
func TestCopyFIFOAfterCrashedReservation(t *testing.T) {
	e, _, _ := newInternal(t)
	ctx := context.Background()
	q := fifoQueue()
	if err := e.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	it := pending(t, e, q, "g", "d1") // the crashed attempt's first step, with its id below
	b := engine.CopyBatch{Topic: ids.New(), Binding: ids.New(), Messages: []engine.CopyMessage{
		{Sequence: 1, ID: it.id, Message: engine.Message{Body: "x", GroupID: "g", DedupID: "d1"}}}}
	for range 2 { // and a second retry is answered as the stored copy
		errs, err := e.Copy(ctx, q, b)
		if err != nil || len(errs) != 1 || errors.Join(errs...) != nil {
			t.Fatalf("copy after a crashed reservation: %v %v", errs, err)
		}
	}
	res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].MessageID != it.id {
		t.Fatalf("received %+v, %v; want the copy once", res.Messages, err)
	}
}

// TestCopyFIFOLateFirstAttempt: a fifo copy's first attempt paused between its two steps
// (its holder lost the lease), a second attempt stored the copy, a consumer acknowledged it —
// and then the first attempt's store arrives. It must store nothing: the partition's record of
// the store (S in dd) says the id was stored already. Before, the late store found the id
// gone from the queue and stored it a second time (a duplicate seen by the fault rounds'
// replica kills).
func TestCopyFIFOLateFirstAttempt(t *testing.T) {
	e, _, _ := newInternal(t)
	ctx := context.Background()
	q := fifoQueue()
	if err := e.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	first := pending(t, e, q, "g", "d1")
	b := engine.CopyBatch{Topic: ids.New(), Binding: ids.New(), Messages: []engine.CopyMessage{
		{Sequence: 1, ID: first.id, Message: engine.Message{Body: "x", GroupID: "g", DedupID: "d1"}}}}
	if errs, err := e.Copy(ctx, q, b); err != nil || errors.Join(errs...) != nil {
		t.Fatalf("second attempt: %v %v", errs, err)
	}
	res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("received %+v, %v; want the copy", res.Messages, err)
	}
	if errs, err := e.Ack(ctx, q, []engine.Delivery{res.Messages[0].Delivery}); err != nil || errors.Join(errs...) != nil {
		t.Fatalf("ack: %v %v", errs, err)
	}
	if code := store(t, e, q, first); code != 1 {
		t.Fatalf("the late first attempt's store answered %d, want 1 (stored before)", code)
	}
	res, err = e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	if err != nil || len(res.Messages) != 0 {
		t.Fatalf("after the late store: received %+v, %v; want nothing (the copy was delivered once)", res.Messages, err)
	}
}
