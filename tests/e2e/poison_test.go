package e2e

import (
	"testing"
)

// TestFIFOPoisonPolicies: onDeadLetter's validation, a parked group in the groups view (state,
// receiveCount, lastError, the state filter), its release, and a move task bringing a
// parkGroup's messages back in order.
func TestFIFOPoisonPolicies(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	dlq := tn.queue(t, "poison-dlq", map[string]any{"type": "fifo"})
	redrive := map[string]any{"deadLetterQueue": dlq.str("id"), "maxReceiveCount": 5}
	c.do("POST", "/v1/queues", map[string]any{"name": "p-bad", "type": "fifo", "onDeadLetter": "park"}).
		fails(t, 400, "invalid_argument", "onDeadLetter")
	c.do("POST", "/v1/queues", map[string]any{"name": "p-bad", "type": "fifo", "onDeadLetter": "later", "redrive": redrive}).
		fails(t, 400, "invalid_argument", "onDeadLetter")
	std := tn.queue(t, "p-std", nil)
	c.do("PATCH", "/v1/queues/p-std", map[string]any{"onDeadLetter": "park"}).fails(t, 400, "invalid_argument", "onDeadLetter")
	if std.str("onDeadLetter") != "continue" {
		t.Fatalf("standard queue's onDeadLetter %q, want continue", std.str("onDeadLetter"))
	}
	q := tn.queue(t, "p-q", map[string]any{"type": "fifo", "onDeadLetter": "park", "redrive": redrive})
	if q.str("onDeadLetter") != "park" {
		t.Fatalf("created %s", q.raw)
	}
	c.do("PATCH", "/v1/queues/p-q", map[string]any{"redrive": nil}).fails(t, 400, "invalid_argument", "onDeadLetter")

	c.sendFIFO(t, "p-q", msg("g1", "g"), msg("g2", "g"), msg("h1", "h"))
	got := c.receive(t, "p-q", map[string]any{"maxMessages": 10})
	if len(got) != 3 {
		t.Fatalf("received %v", got)
	}
	c.do("POST", "/v1/receipts/dead-letter", map[string]any{"receiptHandle": got[0]["receiptHandle"], "reason": "schema mismatch"}).must(t, 204)
	c.do("POST", "/v1/receipts/visibility", map[string]any{"receiptHandle": got[1]["receiptHandle"], "visibilityTimeoutSeconds": 0}).must(t, 204)
	c.do("POST", "/v1/receipts/ack", map[string]any{"receiptHandle": got[2]["receiptHandle"]}).must(t, 204)
	if more := c.receive(t, "p-q", map[string]any{"maxMessages": 10}); len(more) != 0 {
		t.Fatalf("a parked group delivered %v", more)
	}
	parked := c.do("GET", "/v1/queues/p-q/groups?state=parked", nil).must(t, 200).list("groups")
	if len(parked) != 1 || parked[0]["groupId"] != "g" || parked[0]["state"] != "parked" ||
		parked[0]["lastError"] != "schema mismatch" || parked[0]["messages"] != 1.0 || parked[0]["receiveCount"] != 1.0 {
		t.Fatalf("parked groups %v", parked)
	}
	if active := c.do("GET", "/v1/queues/p-q/groups?state=active", nil).must(t, 200).list("groups"); len(active) != 0 {
		t.Fatalf("active groups %v", active)
	}
	c.do("GET", "/v1/queues/p-q/groups?state=sleeping", nil).fails(t, 400, "invalid_argument", "state")
	c.do("POST", "/v1/queues/p-q/groups/nope/release", nil).fails(t, 404, "not_found", "groupId")
	c.do("POST", "/v1/queues/p-q/groups/g/release", nil).must(t, 204)
	c.do("POST", "/v1/queues/p-q/groups/g/release", nil).fails(t, 409, "group_not_parked", "groupId")
	if after := c.receive(t, "p-q", map[string]any{"maxMessages": 10}); len(after) != 1 || after[0]["body"] != "g2" {
		t.Fatalf("after the release: %v", after)
	}

	// parkGroup: the rest of the group follows; a move task brings the whole group back in order.
	dlq2 := tn.queue(t, "poison-dlq2", map[string]any{"type": "fifo"})
	tn.queue(t, "pg-q", map[string]any{"type": "fifo", "onDeadLetter": "parkGroup",
		"redrive": map[string]any{"deadLetterQueue": dlq2.str("id"), "maxReceiveCount": 5}})
	c.sendFIFO(t, "pg-q", msg("k1", "k"), msg("k2", "k"), msg("k3", "k"))
	k := c.receive(t, "pg-q", map[string]any{"maxMessages": 1})
	c.do("POST", "/v1/receipts/dead-letter", map[string]any{"receiptHandle": k[0]["receiptHandle"]}).must(t, 204)
	c.sendFIFO(t, "pg-q", msg("k4", "k"))
	task := c.do("POST", "/v1/queues/poison-dlq2/move-tasks", nil).must(t, 201)
	if st := awaitTask(t, c, "poison-dlq2", task.str("id")); st.str("status") != "completed" {
		t.Fatalf("move task %s", st.raw)
	}
	back := c.receive(t, "pg-q", map[string]any{"maxMessages": 10})
	var order []string
	for _, m := range back {
		order = append(order, m["body"].(string))
	}
	if len(order) != 4 || order[0] != "k1" || order[1] != "k2" || order[2] != "k3" || order[3] != "k4" {
		t.Fatalf("group k came back as %v, want k1..k4", order)
	}
}
