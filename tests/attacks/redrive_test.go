package attacks

import (
	"testing"
)

// receiveHandle receives at most one message of queue (waiting up to wait seconds, visible for
// vis seconds) and answers its receipt handle, "" when none came.
func receiveHandle(t *testing.T, token, queue string, wait, vis int) string {
	t.Helper()
	r := call(t, "POST", "/v1/queues/"+queue+"/receive", token, map[string]any{"waitSeconds": wait, "visibilityTimeoutSeconds": vis})
	r.is(t, 200, "", "")
	ms, _ := r.body["messages"].([]any)
	if len(ms) == 0 {
		return ""
	}
	h, _ := ms[0].(map[string]any)["receiptHandle"].(string)
	remember(h)
	return h
}

// counts reads a queue's message counts.
func counts(t *testing.T, token, queue string) map[string]any {
	t.Helper()
	a := call(t, "GET", "/v1/queues/"+queue, token, nil)
	a.is(t, 200, "", "")
	c, _ := a.body["counts"].(map[string]any)
	return c
}

// Issue 31, the zombie: a consumer receives a message (visibility 1 s) and stalls; the message
// is dead-lettered (maxReceiveCount 1) and moved back by a move task; received again, it must
// get a new handle, and the zombie's late ack of its first handle must be 410 and change
// nothing. Before the fix the new handle was byte for byte the first one (dead-letter and
// move restarted the attempt it names), and the zombie's ack deleted the redriven message.
func TestZombieAckAfterRedrive(t *testing.T) {
	_, tok := project(t)
	call(t, "POST", "/v1/queues", tok, map[string]any{"name": "zombie-dlq"}).is(t, 201, "", "")
	dlqID, _ := call(t, "GET", "/v1/queues/zombie-dlq", tok, nil).body["id"].(string)
	call(t, "POST", "/v1/queues", tok, map[string]any{"name": "zombie",
		"redrive": map[string]any{"deadLetterQueue": dlqID, "maxReceiveCount": 1}}).is(t, 201, "", "")
	call(t, "POST", "/v1/queues/zombie/messages", tok, map[string]any{"messages": []any{map[string]any{"body": "work"}}}).is(t, 200, "", "")

	first := receiveHandle(t, tok, "zombie", 0, 1)
	if first == "" {
		t.Fatal("nothing received")
	}
	// The zombie stalls. A long poll wakes when its visibility lapses; that receive finds the
	// message received maxReceiveCount times and dead-letters it.
	for i := 0; counts(t, tok, "zombie-dlq")["visible"] != float64(1); i++ {
		if i == 20 {
			t.Fatalf("never dead-lettered: %v", counts(t, tok, "zombie-dlq"))
		}
		if h := receiveHandle(t, tok, "zombie", 2, 30); h != "" {
			t.Fatal("received again instead of dead-lettered")
		}
	}
	call(t, "POST", "/v1/queues/zombie-dlq/move-tasks", tok, map[string]any{}).is(t, 201, "", "")
	// The long poll wakes when the move task puts it back.
	again := receiveHandle(t, tok, "zombie", 10, 30)
	if again == "" {
		t.Fatal("the move task did not bring the message back")
	}
	if again == first {
		t.Fatal("the redriven message's new receipt handle is the zombie's handle")
	}
	ackHandle(t, e.base, first).is(t, 410, "receipt_handle_stale", "")
	if c := counts(t, tok, "zombie"); c["inFlight"] != float64(1) {
		t.Fatalf("the zombie's ack changed the redriven message: counts %v", c)
	}
	ackHandle(t, e.base, again).is(t, 204, "", "")
}
