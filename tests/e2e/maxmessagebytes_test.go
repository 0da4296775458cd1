package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMaxMessageBytes: a queue's maxMessageBytes (docs/api-tour.md) is set at creation, changed by
// PATCH and shown by GET (262,144 when unset); values outside 1,024–1,048,576 are refused
// naming the field; a send over the queue's own limit fails that message, and a 1 MiB message
// goes through /v1 whole on a queue that allows it.
func TestMaxMessageBytes(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	if d := tn.queue(t, "plain", nil).body["maxMessageBytes"]; d != 262144.0 {
		t.Fatalf("default maxMessageBytes %v, want 262144", d)
	}
	big := tn.queue(t, "big", map[string]any{"maxMessageBytes": 1 << 20})
	if big.body["maxMessageBytes"] != float64(1<<20) {
		t.Fatalf("created %s", big.raw)
	}
	for _, v := range []any{1023, 1<<20 + 1, "4096", 2048.5, nil} {
		c.do("POST", "/v1/queues", map[string]any{"name": "bad", "maxMessageBytes": v}).fails(t, 400, "invalid_argument", "maxMessageBytes")
		c.do("PATCH", "/v1/queues/big", map[string]any{"maxMessageBytes": v}).fails(t, 400, "invalid_argument", "maxMessageBytes")
	}

	// A message of exactly 1 MiB, body and attributes together, round-trips through /v1.
	body := strings.Repeat("m", 1<<20-6)
	r := c.do("POST", "/v1/queues/big/messages", map[string]any{"messages": []any{
		map[string]any{"body": body, "attributes": map[string]string{"k": "vvvvv"}},
		map[string]any{"body": body + "x", "attributes": map[string]string{"k": "vvvvv"}},
	}}).must(t, 200)
	if f := r.list("failed"); len(f) != 1 || f[0]["index"] != 1.0 || f[0]["error"].(map[string]any)["code"] != "payload_too_large" ||
		f[0]["error"].(map[string]any)["details"].(map[string]any)["field"] != "messages[1]" {
		t.Fatalf("1 MiB and 1 MiB + 1: %.300s", r.raw)
	}
	got := c.receive(t, "big", nil)
	if len(got) != 1 || got[0]["body"] != body {
		t.Fatalf("received %d messages, want the 1 MiB one", len(got))
	}
	// The default queue refuses what passes 256 KiB.
	r = c.do("POST", "/v1/queues/plain/messages", map[string]any{"messages": []any{map[string]any{"body": strings.Repeat("p", 262145)}}}).must(t, 200)
	if f := r.list("failed"); len(f) != 1 || f[0]["error"].(map[string]any)["code"] != "payload_too_large" {
		t.Fatalf("256 KiB + 1 on a default queue: %.300s", r.raw)
	}

	// Lowered by PATCH, the limit applies to the next send.
	if p := c.do("PATCH", "/v1/queues/big", map[string]any{"maxMessageBytes": 1024}).must(t, 200); p.body["maxMessageBytes"] != 1024.0 {
		t.Fatalf("patched %s", p.raw)
	}
	if g := c.do("GET", "/v1/queues/big", nil).must(t, 200); g.body["maxMessageBytes"] != 1024.0 {
		t.Fatalf("get after the patch %.300s", g.raw)
	}
	r = c.do("POST", "/v1/queues/big/messages", map[string]any{"messages": []any{
		map[string]any{"body": strings.Repeat("s", 1024)}, map[string]any{"body": strings.Repeat("s", 1025)}}}).must(t, 200)
	if f := r.list("failed"); len(f) != 1 || f[0]["index"] != 1.0 || len(r.list("messages")) != 1 {
		t.Fatalf("1,024 and 1,025 bytes under 1,024: %.300s", r.raw)
	}
}

// TestMaxMessageBytesTopics: a topic takes messages up to 1 MiB; a bound queue whose
// maxMessageBytes is smaller refuses the larger ones, which its binding records as failed
// (docs/topics.md#replay), while another bound queue takes them; a replay into the smaller queue
// counts the larger one failed too.
func TestMaxMessageBytesTopics(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	c.do("POST", "/v1/topics", map[string]any{"name": "sizes"}).must(t, 201)
	tn.queue(t, "tiny", map[string]any{"maxMessageBytes": 1024})
	tn.queue(t, "roomy", map[string]any{"maxMessageBytes": 1 << 20})
	src := c.do("POST", "/v1/queues/tiny/sources", map[string]any{"topic": "sizes"}).must(t, 201)
	c.do("POST", "/v1/queues/roomy/sources", map[string]any{"topic": "sizes"}).must(t, 201)

	large := strings.Repeat("L", 1<<20)
	c.do("POST", "/v1/topics/sizes/messages", map[string]any{"messages": []any{
		map[string]any{"body": large}, map[string]any{"body": "small"}}}).must(t, 200)
	r := c.do("POST", "/v1/topics/sizes/messages", map[string]any{"messages": []any{map[string]any{"body": large + "x"}}}).must(t, 200)
	if f := r.list("failed"); len(f) != 1 || f[0]["error"].(map[string]any)["code"] != "payload_too_large" {
		t.Fatalf("a publish of 1 MiB + 1: %.300s", r.raw)
	}

	var bodies []string
	for len(bodies) < 2 {
		got := c.receive(t, "roomy", map[string]any{"waitSeconds": 10, "maxMessages": 10})
		if len(got) == 0 {
			t.Fatalf("roomy received nothing more after %d messages", len(bodies))
		}
		for _, m := range got {
			bodies = append(bodies, m["body"].(string))
		}
	}
	if len(bodies) != 2 || bodies[0] != large || bodies[1] != "small" {
		t.Fatalf("roomy received %d messages", len(bodies))
	}
	got := c.receive(t, "tiny", map[string]any{"waitSeconds": 10})
	if len(got) != 1 || got[0]["body"] != "small" {
		t.Fatalf("tiny received %d messages, the first of %d bytes; want only \"small\"", len(got), len(fmt.Sprint(got[0]["body"])))
	}
	// The binding's record follows the copy (the fan-out advances it after storing).
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := c.do("GET", "/v1/queues/tiny/sources/"+src.str("id"), nil).must(t, 200)
		lf, _ := s.body["lastFailure"].(map[string]any)
		if s.body["failed"] == 1.0 && s.body["copied"] == 1.0 && lf != nil && strings.Contains(lf["reason"].(string), "maxMessageBytes is 1024") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tiny's binding %s", s.raw)
		}
	}

	tn.queue(t, "tiny-replayed", map[string]any{"maxMessageBytes": 1024})
	rp := c.do("POST", "/v1/topics/sizes/replays", map[string]any{"queue": "tiny-replayed", "from": 1}).must(t, 201)
	done := awaitReplay(t, c, "sizes", rp.str("id"))
	if done.str("status") != "completed" || done.body["moved"] != 1.0 || done.body["failed"] != 1.0 {
		t.Fatalf("replay into a 1,024-byte queue: %s", done.raw)
	}
}
