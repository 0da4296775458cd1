package e2e

import "testing"

// TestAtMostOnce: an at-most-once queue (docs/delivery-options.md#at-most-once-queues) shows its
// delivery, refuses it on fifo and in a PATCH, and a receive through either replica hands each
// message out once, without a receipt handle or deadline, leaving nothing in flight and no bytes
// stored.
func TestAtMostOnce(t *testing.T) {
	tn := newTenant(t)
	a, b := tn.a, tn.b
	if q := tn.queue(t, "once", map[string]any{"delivery": "atMostOnce"}); q.str("delivery") != "atMostOnce" {
		t.Fatalf("created %s, want delivery atMostOnce", q.raw)
	}
	if q := tn.queue(t, "plain", nil); q.str("delivery") != "atLeastOnce" {
		t.Fatalf("created %s, want the default delivery atLeastOnce", q.raw)
	}
	a.do("POST", "/v1/queues", map[string]any{"name": "x.fifo", "type": "fifo", "delivery": "atMostOnce"}).fails(t, 400, "invalid_argument", "delivery")
	a.do("POST", "/v1/queues", map[string]any{"name": "x", "delivery": "exactlyOnce"}).fails(t, 400, "invalid_argument", "delivery")
	a.do("PATCH", "/v1/queues/plain", map[string]any{"delivery": "atMostOnce"}).fails(t, 400, "invalid_argument", "delivery")
	a.do("PATCH", "/v1/queues/once", map[string]any{"delivery": "atLeastOnce"}).fails(t, 400, "invalid_argument", "delivery")

	a.send(t, "once", "a", "b", "c")
	got := b.receive(t, "once", map[string]any{"maxMessages": 10, "visibilityTimeoutSeconds": 0})
	if len(got) != 3 {
		t.Fatalf("received %v, want all three", got)
	}
	for _, m := range got {
		if _, ok := m["receiptHandle"]; ok {
			t.Fatalf("an at-most-once message carries a receiptHandle: %v", m)
		}
		if _, ok := m["visibilityDeadline"]; ok || m["receiveCount"] != 1.0 {
			t.Fatalf("message %v: want receiveCount 1 and no visibilityDeadline", m)
		}
	}
	if got := a.receive(t, "once", map[string]any{"maxMessages": 10}); len(got) != 0 {
		t.Fatalf("received again %v, want nothing (visibility 0 would have made them visible at once)", got)
	}
	if c := a.counts(t, "once"); c["visible"] != 0.0 || c["inFlight"] != 0.0 || c["delayed"] != 0.0 {
		t.Fatalf("counts %v, want the queue empty and nothing in flight", c)
	}
	if use := a.do("GET", "/v1/project", nil).must(t, 200).body["usage"].(map[string]any); use["storedBytes"] != 0.0 {
		t.Fatalf("usage %v, want no bytes stored once every message was handed out", use)
	}
	if m := a.do("GET", "/v1/queues/once/messages?state=inFlight", nil).must(t, 200).list("messages"); len(m) != 0 {
		t.Fatalf("browse in flight %v, want nothing", m)
	}
}
