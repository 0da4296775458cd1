package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"testing"
)

// TestFIFOSendSequenceNumber: a fifo send answers each stored message's sequenceNumber (a
// decimal string, the one its receive carries) and a duplicate the original's, through either
// replica; a standard queue's send answers none.
func TestFIFOSendSequenceNumber(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "seq", map[string]any{"type": "fifo", "contentBasedDedup": true})
	tn.queue(t, "plain", nil)
	sent, failed := tn.a.sendFIFO(t, "seq", msg("a1", "a", "dedupId", "d1"), msg("b1", "b"), msg("a2", "a"))
	if len(sent) != 3 || len(failed) != 0 {
		t.Fatalf("sent %v, failed %v", sent, failed)
	}
	digits := regexp.MustCompile(`^[0-9]{1,20}$`)
	want := map[string]any{}
	for _, s := range sent {
		if seq, _ := s["sequenceNumber"].(string); !digits.MatchString(seq) {
			t.Fatalf("send answered %v, want a decimal sequenceNumber", s)
		}
		want[s["messageId"].(string)] = s["sequenceNumber"]
	}
	dup, _ := tn.b.sendFIFO(t, "seq", msg("other", "c", "dedupId", "d1"), msg("b1", "z"))
	for i, orig := range []map[string]any{sent[0], sent[1]} {
		if dup[i]["duplicate"] != true || dup[i]["messageId"] != orig["messageId"] || dup[i]["sequenceNumber"] != orig["sequenceNumber"] {
			t.Fatalf("duplicate %v, want the original's id and sequenceNumber %v", dup[i], orig)
		}
	}
	got := tn.b.receive(t, "seq", map[string]any{"maxMessages": 10})
	if len(got) != 3 {
		t.Fatalf("received %v", got)
	}
	for _, m := range got {
		if m["sequenceNumber"] != want[m["messageId"].(string)] {
			t.Fatalf("received %v, sent with sequenceNumber %v", m, want[m["messageId"].(string)])
		}
	}
	r := tn.a.do("POST", "/v1/queues/plain/messages", map[string]any{"messages": []any{map[string]any{"body": "x"}}}).must(t, 200)
	if m := r.list("messages"); len(m) != 1 || m[0]["sequenceNumber"] != nil {
		t.Fatalf("standard send answered %s", r.raw)
	}
}

// TestFIFOHashDedupID: with contentBasedDedup, a dedupId equal to a body's SHA-256 in
// lowercase hex is that body's content-based id, either way round (docs/sqs.md).
func TestFIFOHashDedupID(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "hash", map[string]any{"type": "fifo", "contentBasedDedup": true})
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	first, _ := tn.a.sendFIFO(t, "hash", msg("alpha", "g"), msg("carrier", "g", "dedupId", hash("beta")))
	again, _ := tn.b.sendFIFO(t, "hash", msg("not alpha", "h", "dedupId", hash("alpha")), msg("beta", "h"))
	for i := range first {
		if again[i]["duplicate"] != true || again[i]["messageId"] != first[i]["messageId"] {
			t.Fatalf("send %d answered %v, want a duplicate of %v", i, again[i], first[i])
		}
	}
	if n := tn.a.counts(t, "hash")["visible"]; n != 2.0 {
		t.Fatalf("visible = %v, want 2", n)
	}
}
