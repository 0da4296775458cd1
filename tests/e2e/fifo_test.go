package e2e

import (
	"net/url"
	"strconv"
	"testing"
)

// sendFIFO sends messages (each a map) and returns the answer's messages and failures.
func (c *client) sendFIFO(t testing.TB, queue string, msgs ...map[string]any) ([]map[string]any, []map[string]any) {
	t.Helper()
	r := c.do("POST", "/v1/queues/"+queue+"/messages", map[string]any{"messages": msgs}).must(t, 200)
	return r.list("messages"), r.list("failed")
}

func msg(body, group string, extra ...any) map[string]any {
	m := map[string]any{"body": body, "groupId": group}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func TestFIFO(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	dlq := tn.queue(t, "orders-dlq", map[string]any{"type": "fifo"})
	q := tn.queue(t, "orders", map[string]any{"type": "fifo", "contentBasedDedup": true,
		"redrive": map[string]any{"deadLetterQueue": dlq.str("id"), "maxReceiveCount": 1}})
	if q.str("type") != "fifo" || q.body["contentBasedDedup"] != true {
		t.Fatalf("created %s", q.raw)
	}

	// Sends: group ids required, dedup ids optional, no per-message delay.
	sent, failed := c.sendFIFO(t, "orders",
		msg("a1", "acct-1", "dedupId", "op-1"),
		msg("a2", "acct-1", "attributes", map[string]any{"k": "v"}),
		msg("b1", "acct-2"),
		msg("late", "acct-1", "delaySeconds", 5),
		map[string]any{"body": "no group"},
		msg("zero delay is fine", "acct-3", "delaySeconds", 0),
	)
	if len(sent) != 4 || len(failed) != 2 {
		t.Fatalf("sent %v, failed %v", sent, failed)
	}
	for _, f := range failed {
		e := f["error"].(map[string]any)
		want := map[float64]string{3: "messages[3].delaySeconds", 4: "messages[4].groupId"}[f["index"].(float64)]
		if e["code"] != "invalid_argument" || e["details"].(map[string]any)["field"] != want {
			t.Fatalf("failure %v, want invalid_argument on %s", f, want)
		}
	}
	for _, s := range sent {
		if s["duplicate"] != false {
			t.Fatalf("first sends answered %v", sent)
		}
	}
	ids := map[string]string{"a1": sent[0]["messageId"].(string), "a2": sent[1]["messageId"].(string)}

	// Duplicates, through the other replica: the same dedup id (another body and group), and
	// with contentBasedDedup the same body without a dedup id.
	dup, _ := tn.b.sendFIFO(t, "orders", msg("other body", "acct-9", "dedupId", "op-1"), msg("a2", "acct-4"))
	if dup[0]["duplicate"] != true || dup[0]["messageId"] != ids["a1"] || dup[1]["duplicate"] != true || dup[1]["messageId"] != ids["a2"] {
		t.Fatalf("duplicates answered %v", dup)
	}
	if n := c.counts(t, "orders")["visible"]; n != 4.0 {
		t.Fatalf("visible = %v after duplicates, want 4", n)
	}

	// Receive: oldest group head first, each group's messages in order, with groupId and a
	// decimal sequenceNumber increasing in send order.
	got := tn.b.receive(t, "orders", map[string]any{"maxMessages": 10, "visibilityTimeoutSeconds": 60})
	var bodies []string
	var last uint64
	for _, m := range got {
		bodies = append(bodies, m["body"].(string))
		seq, err := strconv.ParseUint(m["sequenceNumber"].(string), 10, 64)
		if err != nil || seq <= last {
			t.Fatalf("sequenceNumber %v after %d", m["sequenceNumber"], last)
		}
		last = seq
	}
	if len(got) != 4 || bodies[0] != "a1" || bodies[1] != "a2" || bodies[2] != "b1" || bodies[3] != "zero delay is fine" {
		t.Fatalf("received %q", bodies)
	}
	if got[0]["groupId"] != "acct-1" || got[2]["groupId"] != "acct-2" || got[0]["messageId"] != ids["a1"] {
		t.Fatalf("received %v", got)
	}
	handle := func(i int) string { return got[i]["receiptHandle"].(string) }

	// Groups: each with its messages and whether a batch is in flight, paginated.
	gs := c.do("GET", "/v1/queues/orders/groups", nil).must(t, 200)
	if list := gs.list("groups"); len(list) != 3 || gs.body["nextCursor"] != nil {
		t.Fatalf("groups: %s", gs.raw)
	}
	byID := map[string]map[string]any{}
	cursor := ""
	for pages := 0; pages < 5; pages++ {
		path := "/v1/queues/orders/groups?limit=1"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := c.do("GET", path, nil).must(t, 200)
		for _, g := range r.list("groups") {
			byID[g["groupId"].(string)] = g
		}
		next, _ := r.body["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if g := byID["acct-1"]; len(byID) != 3 || g["messages"] != 2.0 || g["inFlight"] != true {
		t.Fatalf("groups by page: %v", byID)
	}
	c.do("GET", "/v1/queues/orders/groups?cursor=bogus", nil).fails(t, 400, "invalid_argument", "cursor")

	// Acknowledging a1 leaves acct-1 locked by a2; nothing else is visible.
	ack(t, c, handle(0)).must(t, 204)
	if more := c.receive(t, "orders", map[string]any{"maxMessages": 10, "waitSeconds": 0}); len(more) != 0 {
		t.Fatalf("received %v while every group has a batch in flight", more)
	}

	// Delete a group: its messages go at once and their handles go stale.
	c.do("DELETE", "/v1/queues/orders/groups/acct-2", nil).must(t, 204)
	ack(t, c, handle(2)).fails(t, 410, "receipt_handle_stale", "")
	if n := c.counts(t, "orders")["inFlight"]; n != 2.0 {
		t.Fatalf("inFlight = %v after deleting a group, want 2", n)
	}
	c.do("DELETE", "/v1/queues/orders/groups/"+url.PathEscape("no such group"), nil).fails(t, 400, "invalid_argument", "groupId")

	// Redrive keeps the group: a2 was received once (maxReceiveCount 1); released, the next
	// receive moves it to the fifo dead-letter queue.
	c.as("").do("POST", "/v1/receipts/visibility", map[string]any{"receiptHandle": handle(1), "visibilityTimeoutSeconds": 0}).must(t, 204)
	if more := c.receive(t, "orders", map[string]any{"maxMessages": 10}); len(more) != 0 {
		t.Fatalf("received %v, want a2 redriven", more)
	}
	dead := c.receive(t, "orders-dlq", map[string]any{"maxMessages": 10})
	if len(dead) != 1 || dead[0]["messageId"] != ids["a2"] || dead[0]["groupId"] != "acct-1" || dead[0]["sequenceNumber"] == nil {
		t.Fatalf("dead-letter queue: %v", dead)
	}
	if dl := dead[0]["deadLetter"].(map[string]any); dl["reason"] != "maxReceiveCount" || dl["sourceQueue"] != q.str("id") {
		t.Fatalf("deadLetter %v", dl)
	}

	// A fifo queue's dead-letter queue is fifo, and a standard one's standard.
	tn.queue(t, "plain", nil)
	c.do("PATCH", "/v1/queues/plain", map[string]any{"redrive": map[string]any{"deadLetterQueue": dlq.str("id"), "maxReceiveCount": 3}}).
		fails(t, 400, "invalid_argument", "redrive.deadLetterQueue")
	c.do("PATCH", "/v1/queues/orders", map[string]any{"redrive": map[string]any{"deadLetterQueue": tn.a.do("GET", "/v1/queues/plain", nil).must(t, 200).str("id"), "maxReceiveCount": 3}}).
		fails(t, 400, "invalid_argument", "redrive.deadLetterQueue")
	c.do("GET", "/v1/queues/plain/groups", nil).fails(t, 400, "invalid_argument", "")
}
