package redisengine

import (
	"context"
	"errors"
	"strconv"
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

// TestCopyFIFOBatchCutBetweenSteps: a batch of fifo copies cut between freserve and fsend
// (some stored by the cut attempt, most not) and then retried is stored once per message, in
// one Copy call, without pausing on its own reservations: the pauses before fencing are made
// an hour long here, so a retry that waited on its own reservation would hit the deadline.
func TestCopyFIFOBatchCutBetweenSteps(t *testing.T) {
	e, _, _ := newInternal(t)
	saved := verifyWaits
	verifyWaits = []time.Duration{0, time.Hour}
	t.Cleanup(func() { verifyWaits = saved })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := fifoQueue()
	if err := e.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	const n = 20
	b := engine.CopyBatch{Topic: ids.New(), Binding: ids.New()}
	for i := range n {
		dedup := "d" + strconv.Itoa(i)
		it := pending(t, e, q, "g", dedup) // the cut attempt's first step
		if i%5 == 0 {
			if c := store(t, e, q, it); c != 1 { // and, for some, its second step too
				t.Fatalf("fsend of the cut attempt: code %d", c)
			}
		}
		b.Messages = append(b.Messages, engine.CopyMessage{Sequence: uint64(i + 1), ID: it.id,
			Message: engine.Message{Body: "x" + strconv.Itoa(i), GroupID: "g", DedupID: dedup}})
	}
	for range 2 { // the retry, and a retry of the retry
		errs, err := e.Copy(ctx, q, b)
		if err != nil || len(errs) != n || errors.Join(errs...) != nil {
			t.Fatalf("copy after a cut: %v %v", errs, err)
		}
	}
	seen := map[ids.ID]int{}
	for {
		res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			break
		}
		for _, m := range res.Messages {
			seen[m.MessageID]++
			if _, err := e.Ack(ctx, q, []engine.Delivery{m.Delivery}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, m := range b.Messages {
		if seen[m.ID] != 1 {
			t.Errorf("copy %s stored %d times, want once", m.ID, seen[m.ID])
		}
	}
	if len(seen) != n {
		t.Errorf("%d messages stored, want %d", len(seen), n)
	}
}
