package e2e

import "testing"

// TestCancel: POST /v1/receipts/cancel returns a message without counting the delivery, and
// the queue's maxCancels sends the cancel beyond it to the dead-letter queue
// (docs/delivery-options.md#cancel).
func TestCancel(t *testing.T) {
	tn := newTenant(t)
	c, anon := tn.a, tn.a.as("")
	dlq := tn.queue(t, "dlq", nil)
	q := tn.queue(t, "jobs", map[string]any{"maxCancels": 1,
		"redrive": map[string]any{"deadLetterQueue": dlq.str("slug"), "maxReceiveCount": 5}})
	if q.body["maxCancels"] != 1.0 {
		t.Fatalf("maxCancels: %s", q.raw)
	}
	if d := dlq.body["maxCancels"]; d != 10.0 {
		t.Fatalf("default maxCancels %v, want 10", d)
	}
	c.do("POST", "/v1/queues", map[string]any{"name": "bad", "maxCancels": 1001}).fails(t, 400, "invalid_argument", "maxCancels")
	c.do("PATCH", "/v1/queues/jobs", map[string]any{"maxCancels": -1}).fails(t, 400, "invalid_argument", "maxCancels")

	ids := c.send(t, "jobs", "work")
	h := c.receive(t, "jobs", nil)[0]["receiptHandle"]
	anon.do("POST", "/v1/receipts/cancel", map[string]any{"receiptHandle": h}).must(t, 204)
	if n := c.counts(t, "jobs"); n["visible"] != 1.0 || n["inFlight"] != 0.0 {
		t.Fatalf("after cancel: %v", n)
	}
	again := c.receive(t, "jobs", nil)
	if len(again) != 1 || again[0]["messageId"] != ids[0] || again[0]["receiveCount"] != 1.0 {
		t.Fatalf("after cancel received %v, want receiveCount 1", again)
	}
	anon.do("POST", "/v1/receipts/cancel", map[string]any{"receiptHandle": h}).fails(t, 410, "receipt_handle_stale", "")
	anon.do("POST", "/v1/receipts/cancel", map[string]any{"receiptHandle": h.(string) + "A"}).fails(t, 400, "receipt_handle_invalid", "receiptHandle")
	anon.do("POST", "/v1/receipts/cancel", map[string]any{}).fails(t, 400, "invalid_argument", "receiptHandle")
	anon.do("POST", "/v1/receipts/cancel", map[string]any{"receiptHandles": []any{}}).fails(t, 400, "invalid_argument", "receiptHandles")

	// The batch form answers per handle; this second cancel is beyond maxCancels 1.
	res := anon.do("POST", "/v1/receipts/cancel", map[string]any{"receiptHandles": []any{again[0]["receiptHandle"], h}}).must(t, 200).list("results")
	if len(res) != 2 || res[0]["error"] != nil || res[1]["error"].(map[string]any)["code"] != "receipt_handle_stale" {
		t.Fatalf("batch cancel: %v", res)
	}
	if n := c.counts(t, "jobs"); n["visible"] != 0.0 || n["inFlight"] != 0.0 {
		t.Fatalf("after the cancel beyond maxCancels: %v", n)
	}
	moved := c.receive(t, "dlq", map[string]any{"waitSeconds": 5})
	if len(moved) != 1 || moved[0]["messageId"] != ids[0] || moved[0]["deadLetter"].(map[string]any)["reason"] != "max_cancels" {
		t.Fatalf("dead-letter queue holds %v", moved)
	}
}
