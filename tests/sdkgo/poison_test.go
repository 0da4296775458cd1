package sdkgo

import (
	"testing"

	"github.com/queueshq/queues/sdk/go/client"
)

// TestPoisonPolicy: onDeadLetter, the groups' state, the state filter on the iterator and
// ReleaseGroup through the Go SDK.
func TestPoisonPolicy(t *testing.T) {
	tn := newTenant(t)
	c, ctx := tn.c, t.Context()
	dlq := tn.queue(t, client.CreateQueueInput{Name: "pz-dlq", Type: client.FIFO})
	q := tn.queue(t, client.CreateQueueInput{Name: "pz", Type: client.FIFO, OnDeadLetter: client.OnDeadLetterPark,
		Redrive: &client.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 5}})
	if q.OnDeadLetter != client.OnDeadLetterPark {
		t.Fatalf("created with onDeadLetter %q", q.OnDeadLetter)
	}
	for _, b := range []string{"a1", "a2"} {
		if _, err := c.Send(ctx, "pz", client.SendMessage{Body: b, GroupID: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := c.Receive(ctx, "pz", client.ReceiveInput{WaitSeconds: client.Int(0), MaxMessages: 1})
	if err != nil || len(ms) != 1 {
		t.Fatalf("receive: %v %v", ms, err)
	}
	if err := c.DeadLetter(ctx, ms[0].ReceiptHandle, "poison"); err != nil {
		t.Fatal(err)
	}
	var parked []client.Group
	for g, err := range c.AllGroupsInState(ctx, "pz", client.GroupParked, client.Page{}) {
		if err != nil {
			t.Fatal(err)
		}
		parked = append(parked, g)
	}
	if len(parked) != 1 || parked[0].GroupID != "a" || parked[0].State != client.GroupParked ||
		parked[0].LastError == nil || *parked[0].LastError != "poison" || parked[0].Messages != 1 {
		t.Fatalf("parked groups %+v", parked)
	}
	if err := c.ReleaseGroup(ctx, "pz", "a"); err != nil {
		t.Fatal(err)
	}
	mustCode(t, c.ReleaseGroup(ctx, "pz", "a"), client.CodeGroupNotParked, 409, "groupId")
	gp, err := c.ListGroupsInState(ctx, "pz", client.GroupActive, client.Page{})
	if err != nil || len(gp.Groups) != 1 || gp.Groups[0].State != client.GroupActive || gp.Groups[0].LastError != nil {
		t.Fatalf("active groups %+v %v", gp, err)
	}
	if _, err := c.UpdateQueue(ctx, "pz", client.UpdateQueueInput{OnDeadLetter: client.OnDeadLetterContinue}); err != nil {
		t.Fatal(err)
	}
}
