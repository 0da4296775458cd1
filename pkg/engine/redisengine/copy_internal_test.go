package redisengine

import (
	"context"
	"errors"
	"slices"
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

// TestCopyFIFOOrderBehindCrashedReservation: a batch whose first copy waits on its own
// earlier attempt's reservation (cut between the two steps) keeps the group's log order: the
// copy after it in the batch is not stored ahead of it. Before, the second copy took its
// sequence number at once and the first a later one, so a consumer got them reversed (the
// fault rounds' fifo order violations after replica kills).
func TestCopyFIFOOrderBehindCrashedReservation(t *testing.T) {
	e, _, _ := newInternal(t)
	ctx := context.Background()
	q := fifoQueue()
	if err := e.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	first := pending(t, e, q, "g", "d1")
	second := ids.New()
	b := engine.CopyBatch{Topic: ids.New(), Binding: ids.New(), Messages: []engine.CopyMessage{
		{Sequence: 1, ID: first.id, Message: engine.Message{Body: "1", GroupID: "g", DedupID: "d1"}},
		{Sequence: 2, ID: second, Message: engine.Message{Body: "2", GroupID: "g", DedupID: "d2"}}}}
	if errs, err := e.Copy(ctx, q, b); err != nil || errors.Join(errs...) != nil {
		t.Fatalf("copy: %v %v", errs, err)
	}
	var got []ids.ID
	for len(got) < 2 {
		res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
		if err != nil || len(res.Messages) == 0 {
			t.Fatalf("after %v: received %+v, %v", got, res.Messages, err)
		}
		for _, m := range res.Messages {
			got = append(got, m.MessageID)
			if errs, err := e.Ack(ctx, q, []engine.Delivery{m.Delivery}); err != nil || errors.Join(errs...) != nil {
				t.Fatalf("ack: %v %v", errs, err)
			}
		}
	}
	if got[0] != first.id || got[1] != second {
		t.Fatalf("received %v, want %v then %v (log order)", got, first.id, second)
	}
}

// TestCopyFIFOBatchCutBetweenSteps: a batch of fifo copies cut between fifo_reserve and fifo_send
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
	want := map[string][]ids.ID{} // each group's copies in batch order
	for i := range n {
		dedup, g := "d"+strconv.Itoa(i), "g"+strconv.Itoa(i%4)
		it := pending(t, e, q, g, dedup) // the cut attempt's first step
		if g == "g0" {
			if c := store(t, e, q, it); c != 1 { // and, for one group, its second step too
				t.Fatalf("fsend of the cut attempt: code %d", c)
			}
		}
		want[g] = append(want[g], it.id)
		b.Messages = append(b.Messages, engine.CopyMessage{Sequence: uint64(i + 1), ID: it.id,
			Message: engine.Message{Body: "x" + strconv.Itoa(i), GroupID: g, DedupID: dedup}})
	}
	for i := n; i < n+8; i++ { // the retry's batch goes further than the cut one
		dedup, g, id := "d"+strconv.Itoa(i), "g"+strconv.Itoa(i%4), ids.New()
		want[g] = append(want[g], id)
		b.Messages = append(b.Messages, engine.CopyMessage{Sequence: uint64(i + 1), ID: id,
			Message: engine.Message{Body: "x" + strconv.Itoa(i), GroupID: g, DedupID: dedup}})
	}
	// The cut attempt's stored copies are consumed before the retry: only the dedup outcome
	// says they were stored.
	first, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	if err != nil || len(first.Messages) != n/4 {
		t.Fatalf("received %d of the cut attempt's copies (%v), want %d", len(first.Messages), err, n/4)
	}
	for _, m := range first.Messages {
		if _, err := e.Ack(ctx, q, []engine.Delivery{m.Delivery}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // the retry, and a retry of the retry
		errs, err := e.Copy(ctx, q, b)
		if err != nil || len(errs) != len(b.Messages) || errors.Join(errs...) != nil {
			t.Fatalf("copy after a cut: %v %v", errs, err)
		}
	}
	seen := map[ids.ID]int{}
	got := map[string][]ids.ID{}
	for _, m := range first.Messages { // received above
		got[m.GroupID] = append(got[m.GroupID], m.MessageID)
	}
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
			got[m.GroupID] = append(got[m.GroupID], m.MessageID)
			if _, err := e.Ack(ctx, q, []engine.Delivery{m.Delivery}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, m := range first.Messages {
		seen[m.MessageID]++
	}
	for _, m := range b.Messages {
		if seen[m.ID] != 1 {
			t.Errorf("copy %s stored %d times, want once", m.ID, seen[m.ID])
		}
	}
	if len(seen) != len(b.Messages) {
		t.Errorf("%d messages stored, want %d", len(seen), len(b.Messages))
	}
	for g, w := range want {
		if !slices.Equal(got[g], w) {
			t.Errorf("group %s received %v, want the batch order %v", g, got[g], w)
		}
	}
}

// TestCopyFIFOOrderBehindOthersReservation: a copy whose dedup id another message reserved
// and never stored (a send cut between its two steps) takes that reservation over in a later
// round, with a later sequence number; the copies of its group after it in the batch wait for
// it (deferBehindHeld), so the group keeps the log's order.
func TestCopyFIFOOrderBehindOthersReservation(t *testing.T) {
	e, _, _ := newInternal(t)
	ctx := context.Background()
	q := fifoQueue()
	if err := e.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	pending(t, e, q, "g", "d1") // another message's reservation of d1, never stored
	first, second := ids.New(), ids.New()
	b := engine.CopyBatch{Topic: ids.New(), Binding: ids.New(), Messages: []engine.CopyMessage{
		{Sequence: 1, ID: first, Message: engine.Message{Body: "1", GroupID: "g", DedupID: "d1"}},
		{Sequence: 2, ID: second, Message: engine.Message{Body: "2", GroupID: "g", DedupID: "d2"}}}}
	if errs, err := e.Copy(ctx, q, b); err != nil || errors.Join(errs...) != nil {
		t.Fatalf("copy: %v %v", errs, err)
	}
	var got []ids.ID
	for len(got) < 2 {
		res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
		if err != nil || len(res.Messages) == 0 {
			t.Fatalf("after %v: received %+v, %v", got, res.Messages, err)
		}
		for _, m := range res.Messages {
			got = append(got, m.MessageID)
			if errs, err := e.Ack(ctx, q, []engine.Delivery{m.Delivery}); err != nil || errors.Join(errs...) != nil {
				t.Fatalf("ack: %v %v", errs, err)
			}
		}
	}
	if got[0] != first || got[1] != second {
		t.Fatalf("received %v, want %v then %v (log order)", got, first, second)
	}
}
