package sdkgo

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

// TestGroupPolicy: the Go SDK creates and patches an exclusive fifo queue, sends endGroup,
// receives with a ConsumerID (without one: a ValidationError naming consumerId), lists the
// group's binding, and Consume with a ConsumerID works on the queue (stream and polling).
func TestGroupPolicy(t *testing.T) {
	tn := newTenant(t)
	ctx := t.Context()
	q := tn.queue(t, client.CreateQueueInput{Name: "carts", Type: client.FIFO, GroupPolicy: client.GroupExclusive,
		GroupAffinitySeconds: client.Int(90), MaxGroupsPerConsumer: client.Int(5)})
	if q.GroupPolicy != client.GroupExclusive || q.GroupAffinitySeconds != 90 || q.MaxGroupsPerConsumer != 5 {
		t.Fatalf("created %+v", q)
	}
	if _, err := tn.c.SendBatch(ctx, "carts", []client.SendMessage{{Body: "add", GroupID: "cart-1"},
		{Body: "checkout", GroupID: "cart-1", EndGroup: true}}); err != nil {
		t.Fatal(err)
	}
	_, err := tn.c.Receive(ctx, "carts", client.ReceiveInput{WaitSeconds: client.Int(0)})
	var ve *client.ValidationError
	if !errors.As(err, &ve) || ve.Field != "consumerId" {
		t.Fatalf("receive without a consumer: %v, want a ValidationError naming consumerId", err)
	}
	got, err := tn.c.Receive(ctx, "carts", client.ReceiveInput{WaitSeconds: client.Int(0), ConsumerID: "w1"})
	if err != nil || len(got) != 1 || got[0].Body != "add" {
		t.Fatalf("w1 received %+v %v", got, err)
	}
	gs, err := tn.c.ListGroups(ctx, "carts", client.Page{})
	if err != nil || len(gs.Groups) != 1 || gs.Groups[0].ConsumerID != "w1" {
		t.Fatalf("groups %+v %v", gs, err)
	}
	if err := tn.c.Ack(ctx, got[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	for _, polling := range []bool{false, true} {
		if _, err := tn.c.Send(ctx, "carts", client.SendMessage{Body: "more", GroupID: "cart-2"}); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		seen := make(chan string, 4)
		done := make(chan error, 1)
		go func() {
			done <- tn.c.Consume(cctx, "carts", func(_ context.Context, m *client.Message) error {
				seen <- m.Body
				return nil
			}, client.ConsumeOptions{ConsumerID: "w1", Polling: polling, WaitSeconds: 1})
		}()
		want := map[bool][]string{false: {"checkout", "more"}, true: {"more"}}[polling] // any order
		var gotBodies []string
		for range want {
			select {
			case b := <-seen:
				gotBodies = append(gotBodies, b)
			case <-cctx.Done():
				t.Fatalf("polling %v: consumed %q, want %q", polling, gotBodies, want)
			}
		}
		slices.Sort(gotBodies)
		if !slices.Equal(gotBodies, want) {
			t.Fatalf("polling %v: consumed %q, want %q", polling, gotBodies, want)
		}
		cancel()
		<-done
	}
	p, err := tn.c.UpdateQueue(ctx, "carts", client.UpdateQueueInput{GroupPolicy: client.GroupSequenced, MaxGroupsPerConsumer: client.Int(7)})
	if err != nil || p.GroupPolicy != client.GroupSequenced || p.MaxGroupsPerConsumer != 7 || p.GroupAffinitySeconds != 90 {
		t.Fatalf("patched %+v %v", p, err)
	}
}
