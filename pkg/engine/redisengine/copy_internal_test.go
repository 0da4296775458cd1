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
