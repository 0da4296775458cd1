package e2e

import (
	"strings"
	"testing"
)

// TestPriority: over /v1 a receive takes the highest priority first and the oldest first
// within one, receive and browse answer each message's priority, and a bad or fifo priority
// fails that message naming messages[i].priority (docs/delivery-options.md#priority).
func TestPriority(t *testing.T) {
	tn := newTenant(t)
	a := tn.a
	tn.queue(t, "alerts", nil)
	r := a.do("POST", "/v1/queues/alerts/messages", map[string]any{"messages": []any{
		map[string]any{"body": "low"},
		map[string]any{"body": "high", "priority": 9},
		map[string]any{"body": "mid", "priority": 4},
		map[string]any{"body": "high2", "priority": 9},
		map[string]any{"body": "bad", "priority": 10},
		map[string]any{"body": "frac", "priority": 2.5},
		map[string]any{"body": "text", "priority": "3"},
	}}).must(t, 200)
	failed := r.list("failed")
	if len(failed) != 3 {
		t.Fatalf("failed %v, want the last three", failed)
	}
	for i, f := range failed {
		e := f["error"].(map[string]any)
		if f["index"] != float64(4+i) || e["code"] != "invalid_argument" || e["details"].(map[string]any)["field"] != "messages["+string(rune('4'+i))+"].priority" {
			t.Fatalf("failed[%d] = %v", i, f)
		}
	}
	page := a.do("GET", "/v1/queues/alerts/messages?state=visible", nil).must(t, 200).list("messages")
	prios := map[string]any{}
	for _, m := range page {
		prios[m["body"].(string)] = m["priority"]
	}
	if prios["low"] != 0.0 || prios["high"] != 9.0 || prios["mid"] != 4.0 || prios["high2"] != 9.0 {
		t.Fatalf("browse priorities %v", prios)
	}
	got := a.receive(t, "alerts", map[string]any{"maxMessages": 10, "waitSeconds": 0})
	var order []string
	for _, m := range got {
		order = append(order, m["body"].(string)+"/"+jsonNum(m["priority"]))
	}
	if s := strings.Join(order, " "); s != "high/9 high2/9 mid/4 low/0" {
		t.Fatalf("received %q, want %q", s, "high/9 high2/9 mid/4 low/0")
	}

	tn.queue(t, "ledger.fifo", map[string]any{"type": "fifo"})
	_, ff := a.sendFIFO(t, "ledger.fifo", msg("x", "g", "priority", 3))
	if len(ff) != 1 {
		t.Fatalf("fifo priority accepted: %v", ff)
	}
	if e := ff[0]["error"].(map[string]any); e["code"] != "invalid_argument" || e["details"].(map[string]any)["field"] != "messages[0].priority" {
		t.Fatalf("fifo priority failed with %v", e)
	}
	a.sendFIFO(t, "ledger.fifo", msg("y", "g"))
	fm := a.receive(t, "ledger.fifo", map[string]any{"maxMessages": 1, "waitSeconds": 0})
	if len(fm) != 1 || fm[0]["priority"] != nil {
		t.Fatalf("fifo receive %v: want one message without priority", fm)
	}
}

func jsonNum(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "none"
	}
	return string(rune('0' + int(f)))
}
