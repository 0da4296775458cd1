package e2e

import "testing"

// TestBarrier: a barrier sent through one replica holds back a message sent through the
// other right after it (the other replica's sends are fenced off the partitions), and waits
// for the message before it; fifo queues refuse it per message, naming the field.
func TestBarrier(t *testing.T) {
	tn := newTenant(t)
	a, b := tn.a, tn.b
	tn.queue(t, "jobs", nil)
	a.send(t, "jobs", "before")
	a.do("POST", "/v1/queues/jobs/messages", map[string]any{"messages": []any{
		map[string]any{"body": "end of day", "barrier": true}}}).must(t, 200)
	b.send(t, "jobs", "after")
	if c := b.counts(t, "jobs"); c["visible"] != 1.0 || c["delayed"] != 2.0 {
		t.Fatalf("counts %v, want visible 1 and delayed 2 (the barrier and what waits behind it)", c)
	}
	recv := func(c *client, want string) map[string]any {
		t.Helper()
		got := c.receive(t, "jobs", map[string]any{"maxMessages": 10, "waitSeconds": 0})
		if want == "" {
			if len(got) != 0 {
				t.Fatalf("received %v, want nothing", got)
			}
			return nil
		}
		if len(got) != 1 || got[0]["body"] != want {
			t.Fatalf("received %v, want only %q", got, want)
		}
		return got[0]
	}
	ack := func(m map[string]any) {
		t.Helper()
		a.do("POST", "/v1/receipts/ack", map[string]any{"receiptHandle": m["receiptHandle"]}).must(t, 204)
	}
	m := recv(b, "before")
	recv(a, "")
	ack(m)
	m = recv(a, "end of day")
	recv(b, "")
	ack(m)
	recv(b, "after")

	tn.queue(t, "ledger.fifo", map[string]any{"type": "fifo"})
	_, failed := a.sendFIFO(t, "ledger.fifo", msg("x", "g", "barrier", true))
	if len(failed) != 1 {
		t.Fatalf("fifo barrier accepted: %v", failed)
	}
	e := failed[0]["error"].(map[string]any)
	if e["code"] != "invalid_argument" || e["details"].(map[string]any)["field"] != "messages[0].barrier" {
		t.Fatalf("fifo barrier failed with %v", e)
	}
}
