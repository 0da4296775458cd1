package e2e

import (
	"fmt"
	"testing"
)

// TestConsumerBacklog: over /v1 and across the two replicas, a consumer's maxBacklog bounds
// what it holds; an ack through the other replica (the handle carries the consumer) frees its
// room; GET …/consumers lists it with its holdings and pages with a cursor that is null
// exactly at the end; bad input names the field.
func TestConsumerBacklog(t *testing.T) {
	tn := newTenant(t)
	a, b := tn.a, tn.b
	q := tn.queue(t, "work", map[string]any{"fairness": "proportional"})
	if q.str("fairness") != "proportional" {
		t.Fatalf("created queue's fairness %q", q.str("fairness"))
	}
	for i := range 6 {
		a.send(t, "work", fmt.Sprint("m", i))
	}
	recv := func(c *client, id string, bound int) []map[string]any {
		t.Helper()
		return c.receive(t, "work", map[string]any{"maxMessages": 10, "waitSeconds": 0, "consumerId": id, "maxBacklog": bound})
	}
	held := recv(a, "w1", 2)
	if len(held) != 2 {
		t.Fatalf("w1 (maxBacklog 2) received %d", len(held))
	}
	if got := recv(b, "w1", 2); len(got) != 0 {
		t.Fatalf("w1 at its bound received %d through the other replica", len(got))
	}
	ack(t, b, held[0]["receiptHandle"].(string))
	if got := recv(a, "w1", 2); len(got) != 1 {
		t.Fatalf("w1 after an ack received %d, want 1", len(got))
	}
	if got := recv(b, "w2", 1); len(got) != 1 {
		t.Fatalf("w2 received %d", len(got))
	}
	a.receive(t, "work", map[string]any{"consumerId": "w3", "waitSeconds": 0})

	page := a.do("GET", "/v1/queues/work/consumers?limit=2", nil).must(t, 200)
	cs := page.list("consumers")
	if len(cs) != 2 || cs[0]["consumerId"] != "w1" || cs[0]["inFlight"] != 2.0 || cs[0]["maxBacklog"] != 2.0 ||
		cs[1]["consumerId"] != "w2" || cs[1]["inFlight"] != 1.0 || page.str("nextCursor") == "" {
		t.Fatalf("first page %v", page.body)
	}
	last := b.do("GET", "/v1/queues/work/consumers?limit=2&cursor="+page.str("nextCursor"), nil).must(t, 200)
	if cs := last.list("consumers"); len(cs) != 1 || cs[0]["consumerId"] != "w3" || cs[0]["maxBacklog"] != nil ||
		last.body["nextCursor"] != nil || cs[0]["lastSeenAt"] == "" {
		t.Fatalf("last page %v", last.body)
	}
	if full := a.do("GET", "/v1/queues/work/consumers?limit=3", nil).must(t, 200); full.body["nextCursor"] != nil {
		t.Fatalf("a full page ending the list has a cursor: %v", full.body)
	}

	for body, field := range map[string]string{
		`{"consumerId":""}`:                     "consumerId",
		`{"consumerId":"has space"}`:            "consumerId",
		`{"consumerId":"w","maxBacklog":0}`:     "maxBacklog",
		`{"consumerId":"w","maxBacklog":10001}`: "maxBacklog",
		`{"maxBacklog":5}`:                      "maxBacklog",
	} {
		a.doCT("POST", "/v1/queues/work/receive", body, "application/json").fails(t, 400, "invalid_argument", field)
	}
	a.do("PATCH", "/v1/queues/work", map[string]any{"fairness": "lottery"}).fails(t, 400, "invalid_argument", "fairness")
	if p := a.do("PATCH", "/v1/queues/work", map[string]any{"fairness": "roundRobin"}).must(t, 200); p.str("fairness") != "roundRobin" {
		t.Fatalf("patched fairness %v", p.body)
	}
	a.do("GET", "/v1/queues/work/consumers?cursor=%21%21", nil).fails(t, 400, "invalid_argument", "cursor")
}
