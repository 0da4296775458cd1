package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestSendReceiveAck(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	tn.queue(t, "work", nil)
	r := c.do("POST", "/v1/queues/work/messages", map[string]any{"messages": []any{
		map[string]any{"body": "héllo 😀", "attributes": map[string]any{"kind": "greeting", "trace.id": "t-1"}},
		map[string]any{"body": ""},
		map[string]any{"body": "later", "delaySeconds": 1},
		map[string]any{"body": "x", "groupId": "g"},
		// Delays reach up to the queue's retention (docs/lifecycle.md#long-delays-and-deliverat;
		// default 345,600 s), not past it.
		map[string]any{"body": "x", "delaySeconds": 345601},
		map[string]any{"body": "x", "attributes": map[string]any{"bad name": "v"}},
		map[string]any{"body": strings.Repeat("a", 256*1024+1)},
	}}).must(t, 200)
	sent, failed := r.list("messages"), r.list("failed")
	if len(sent) != 2 || sent[0]["index"] != 0.0 || sent[1]["index"] != 2.0 || sent[0]["duplicate"] != false {
		t.Fatalf("sent: %s", r.raw)
	}
	wantFailed := map[float64][2]string{1: {"invalid_argument", "messages[1].body"}, 3: {"invalid_argument", "messages[3].groupId"},
		4: {"invalid_argument", "messages[4].delaySeconds"}, 5: {"invalid_argument", "messages[5].attributes"}, 6: {"payload_too_large", "messages[6]"}}
	if len(failed) != len(wantFailed) {
		t.Fatalf("failed: %s", r.raw)
	}
	for _, f := range failed {
		e := f["error"].(map[string]any)
		w := wantFailed[f["index"].(float64)]
		if e["code"] != w[0] || e["details"].(map[string]any)["field"] != w[1] {
			t.Errorf("failed entry %v: %v, want %v", f["index"], e, w)
		}
	}
	counts := c.counts(t, "work")
	if counts["visible"] != 1.0 || counts["delayed"] != 1.0 || counts["inFlight"] != 0.0 {
		t.Fatalf("counts after send: %v", counts)
	}

	got := c.receive(t, "work", map[string]any{"maxMessages": 10})
	if len(got) != 1 {
		t.Fatalf("received %d, want the 1 visible", len(got))
	}
	m := got[0]
	attrs := m["attributes"].(map[string]any)
	if m["body"] != "héllo 😀" || attrs["kind"] != "greeting" || attrs["trace.id"] != "t-1" || m["receiveCount"] != 1.0 || m["messageId"] != sent[0]["messageId"] {
		t.Fatalf("received %v", m)
	}
	if _, fifo := m["groupId"]; fifo {
		t.Fatalf("standard message carries groupId: %v", m)
	}
	if n := c.counts(t, "work")["inFlight"]; n != 1.0 {
		t.Fatalf("inFlight = %v", n)
	}
	browse := c.do("GET", "/v1/queues/work/messages?state=inFlight", nil).must(t, 200).list("messages")
	if len(browse) != 1 || browse[0]["messageId"] != m["messageId"] || browse[0]["state"] != "inFlight" {
		t.Fatalf("browse inFlight: %v", browse)
	}
	if _, leaked := browse[0]["receiptHandle"]; leaked {
		t.Fatal("browse returned a receipt handle")
	}
	c.do("GET", "/v1/queues/work/messages?state=gone", nil).fails(t, 400, "invalid_argument", "state")

	ack(t, c, m["receiptHandle"].(string)).must(t, 204)
	ack(t, c, m["receiptHandle"].(string)).fails(t, 410, "receipt_handle_stale", "")

	// The delayed message becomes visible by time and wakes a waiting receive.
	later := c.receive(t, "work", map[string]any{"waitSeconds": 10})
	if len(later) != 1 || later[0]["body"] != "later" {
		t.Fatalf("delayed message: %v", later)
	}
	ack(t, c, later[0]["receiptHandle"].(string)).must(t, 204)
	counts = c.counts(t, "work")
	if counts["visible"] != 0.0 || counts["delayed"] != 0.0 || counts["inFlight"] != 0.0 {
		t.Fatalf("counts at the end: %v", counts)
	}
	// An explicit 0 answers at once even when the queue waits by default.
	c.do("PATCH", "/v1/queues/work", map[string]any{"receiveWaitSeconds": 20}).must(t, 200)
	if got := c.receive(t, "work", map[string]any{"waitSeconds": 0}); len(got) != 0 {
		t.Fatalf("empty queue gave %v", got)
	}
}

func TestVisibility(t *testing.T) {
	tn := newTenant(t)
	c, anon := tn.a, tn.a.as("")
	tn.queue(t, "vis", nil)
	c.send(t, "vis", "m")
	first := c.receive(t, "vis", map[string]any{"visibilityTimeoutSeconds": 1})[0]
	h1 := first["receiptHandle"].(string)
	// The deadline passes: the message is visible again and a waiting receive gets it.
	second := c.receive(t, "vis", map[string]any{"waitSeconds": 10, "visibilityTimeoutSeconds": 30})
	if len(second) != 1 || second[0]["receiveCount"] != 2.0 || second[0]["messageId"] != first["messageId"] {
		t.Fatalf("redelivery: %v", second)
	}
	h2 := second[0]["receiptHandle"].(string)
	if h1 == h2 {
		t.Fatal("a new receive returned the same handle")
	}
	anon.do("POST", "/v1/receipts/visibility", map[string]any{"receiptHandle": h1, "visibilityTimeoutSeconds": 10}).fails(t, 410, "receipt_handle_stale", "")
	ack(t, c, h1).fails(t, 410, "receipt_handle_stale", "")

	// Retry after d: counts as in flight until d has passed.
	anon.do("POST", "/v1/receipts/visibility", map[string]any{"receiptHandle": h2, "visibilityTimeoutSeconds": 1}).must(t, 204)
	if n := c.counts(t, "vis"); n["inFlight"] != 1.0 || n["visible"] != 0.0 {
		t.Fatalf("retry-after counts: %v", n)
	}
	// The handle still works after its deadline, until another receive takes the message.
	third := c.receive(t, "vis", map[string]any{"waitSeconds": 10})
	if len(third) != 1 || third[0]["receiveCount"] != 3.0 {
		t.Fatalf("after retry: %v", third)
	}
	h3 := third[0]["receiptHandle"].(string)
	// Release (0): visible at once.
	anon.do("POST", "/v1/receipts/visibility", map[string]any{"receiptHandle": h3, "visibilityTimeoutSeconds": 0}).must(t, 204)
	if n := c.counts(t, "vis"); n["visible"] != 1.0 {
		t.Fatalf("release counts: %v", n)
	}
	fourth := c.receive(t, "vis", nil)
	h4 := fourth[0]["receiptHandle"].(string)
	// The 12 h cap counts from the receive.
	anon.do("POST", "/v1/receipts/visibility", map[string]any{"receiptHandle": h4, "visibilityTimeoutSeconds": 43201}).fails(t, 400, "invalid_argument", "visibilityTimeoutSeconds")
	anon.do("POST", "/v1/receipts/visibility", map[string]any{"receiptHandle": h4, "visibilityTimeoutSeconds": 43200}).fails(t, 400, "visibility_limit_exceeded", "visibilityTimeoutSeconds")
	anon.do("POST", "/v1/receipts/visibility", map[string]any{"receiptHandle": h4, "visibilityTimeoutSeconds": 43000}).must(t, 204)
	anon.do("POST", "/v1/receipts/visibility", map[string]any{"receiptHandle": h4}).fails(t, 400, "invalid_argument", "visibilityTimeoutSeconds")

	// Batch forms answer per entry.
	c.send(t, "vis", "b1", "b2")
	got := c.receive(t, "vis", map[string]any{"maxMessages": 10})
	if len(got) != 2 {
		t.Fatalf("batch receive: %v", got)
	}
	res := anon.do("POST", "/v1/receipts/visibility", map[string]any{"entries": []any{
		map[string]any{"receiptHandle": got[0]["receiptHandle"], "visibilityTimeoutSeconds": 60},
		map[string]any{"receiptHandle": h1, "visibilityTimeoutSeconds": 60},
		map[string]any{"receiptHandle": "forged", "visibilityTimeoutSeconds": 60},
		map[string]any{"receiptHandle": got[1]["receiptHandle"], "visibilityTimeoutSeconds": 99999},
	}}).must(t, 200).list("results")
	wantCodes := []string{"", "receipt_handle_stale", "receipt_handle_invalid", "invalid_argument"}
	for i, r := range res {
		code := ""
		if e, ok := r["error"].(map[string]any); ok {
			code = e["code"].(string)
		}
		if r["index"] != float64(i) || code != wantCodes[i] {
			t.Errorf("entry %d: %v, want %q", i, r, wantCodes[i])
		}
	}
	acks := anon.do("POST", "/v1/receipts/ack", map[string]any{"receiptHandles": []any{got[0]["receiptHandle"], got[1]["receiptHandle"], h4, h1, h4}}).must(t, 200).list("results")
	for i, r := range acks {
		e, failed := r["error"].(map[string]any)
		if failed != (i >= 3) {
			t.Errorf("ack entry %d: %v", i, r)
		}
		if i == 4 && (e["code"] != "invalid_argument" || e["details"].(map[string]any)["field"] != "receiptHandles[4]") {
			t.Errorf("a handle repeated in one batch: %v", r)
		}
	}
	if n := c.counts(t, "vis"); n["visible"] != 0.0 || n["inFlight"] != 0.0 {
		t.Fatalf("after batch ack: %v", n)
	}
	anon.do("POST", "/v1/receipts/ack", map[string]any{"receiptHandle": "x", "receiptHandles": []any{"y"}}).fails(t, 400, "invalid_argument", "receiptHandle")
	anon.do("POST", "/v1/receipts/ack", map[string]any{"receiptHandles": []any{}}).fails(t, 400, "invalid_argument", "receiptHandles")
	anon.do("POST", "/v1/receipts/ack", map[string]any{}).fails(t, 400, "invalid_argument", "receiptHandle")
	anon.do("POST", "/v1/receipts/ack", map[string]any{"receiptHandle": h1 + "A"}).fails(t, 400, "receipt_handle_invalid", "receiptHandle")
}

func TestDeadLetters(t *testing.T) {
	tn := newTenant(t)
	c, anon := tn.a, tn.a.as("")
	dlq := tn.queue(t, "dlq", nil)
	src := tn.queue(t, "src", map[string]any{"redrive": map[string]any{"deadLetterQueue": dlq.str("slug"), "maxReceiveCount": 2}})
	if rd := src.body["redrive"].(map[string]any); rd["deadLetterQueue"] != dlq.str("id") || rd["maxReceiveCount"] != 2.0 {
		t.Fatalf("redrive: %s", src.raw)
	}
	ids := c.send(t, "src", "poison")
	for i := 1; i <= 2; i++ {
		got := c.receive(t, "src", map[string]any{"visibilityTimeoutSeconds": 0})
		if len(got) != 1 || got[0]["receiveCount"] != float64(i) {
			t.Fatalf("receive %d: %v", i, got)
		}
	}
	// The third receive finds it was received maxReceiveCount times and moves it instead.
	if got := c.receive(t, "src", nil); len(got) != 0 {
		t.Fatalf("poison message returned a third time: %v", got)
	}
	moved := c.receive(t, "dlq", map[string]any{"waitSeconds": 5})
	if len(moved) != 1 {
		t.Fatalf("dead-letter queue holds %v", moved)
	}
	dl := moved[0]["deadLetter"].(map[string]any)
	if moved[0]["messageId"] != ids[0] || moved[0]["body"] != "poison" || moved[0]["receiveCount"] != 1.0 ||
		dl["sourceQueue"] != src.str("id") || dl["reason"] != "maxReceiveCount" {
		t.Fatalf("dead-lettered message: %v", moved[0])
	}
	// A consumer's dead-letter, with and without a reason.
	c.send(t, "src", "bad1", "bad2")
	got := c.receive(t, "src", map[string]any{"maxMessages": 2})
	anon.do("POST", "/v1/receipts/dead-letter", map[string]any{"receiptHandle": got[0]["receiptHandle"], "reason": "schema mismatch"}).must(t, 204)
	anon.do("POST", "/v1/receipts/dead-letter", map[string]any{"entries": []any{map[string]any{"receiptHandle": got[1]["receiptHandle"]}}}).must(t, 200)
	anon.do("POST", "/v1/receipts/dead-letter", map[string]any{"receiptHandle": got[1]["receiptHandle"]}).fails(t, 410, "receipt_handle_stale", "")
	anon.do("POST", "/v1/receipts/dead-letter", map[string]any{"receiptHandle": got[1]["receiptHandle"], "reason": ""}).fails(t, 400, "invalid_argument", "reason")
	reasons := map[string]string{}
	for _, m := range c.receive(t, "dlq", map[string]any{"maxMessages": 10, "waitSeconds": 5}) {
		reasons[m["body"].(string)] = m["deadLetter"].(map[string]any)["reason"].(string)
	}
	if len(reasons) < 2 {
		reasons2 := c.receive(t, "dlq", map[string]any{"maxMessages": 10, "waitSeconds": 5})
		for _, m := range reasons2 {
			reasons[m["body"].(string)] = m["deadLetter"].(map[string]any)["reason"].(string)
		}
	}
	if reasons["bad1"] != "schema mismatch" || reasons["bad2"] != "consumer" {
		t.Fatalf("reasons: %v", reasons)
	}
	// A dead-letter queue in use cannot be deleted until the policy goes.
	c.do("DELETE", "/v1/queues/dlq", nil).fails(t, 409, "queue_in_use", "")
	c.do("PATCH", "/v1/queues/src", map[string]any{"redrive": nil}).must(t, 200)
	// Without a policy a consumer's dead-letter drops the message.
	c.send(t, "src", "drop")
	h := c.receive(t, "src", nil)[0]["receiptHandle"]
	anon.do("POST", "/v1/receipts/dead-letter", map[string]any{"receiptHandle": h}).must(t, 204)
	if n := c.counts(t, "src"); n["visible"] != 0.0 || n["inFlight"] != 0.0 {
		t.Fatalf("dropped message still counted: %v", n)
	}
	c.do("DELETE", "/v1/queues/dlq", nil).must(t, 204)
}

func TestPurge(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	tn.queue(t, "p", nil)
	c.send(t, "p", "a", "b", "c")
	held := c.receive(t, "p", nil)[0]["receiptHandle"].(string)
	r := c.do("POST", "/v1/queues/p/purge", nil).must(t, 202)
	if r.str("purgedAt") == "" {
		t.Fatalf("purge: %s", r.raw)
	}
	if n := c.counts(t, "p"); n["visible"] != 0.0 || n["inFlight"] != 0.0 {
		t.Fatalf("after purge: %v", n)
	}
	ack(t, c, held).fails(t, 410, "receipt_handle_stale", "")
	c.send(t, "p", "after")
	again := c.do("POST", "/v1/queues/p/purge", nil)
	again.fails(t, 429, "purge_too_soon", "")
	if again.header.Get("Retry-After") == "" {
		t.Fatal("purge_too_soon without Retry-After")
	}
	if got := c.receive(t, "p", nil); len(got) != 1 || got[0]["body"] != "after" {
		t.Fatalf("message sent after the purge: %v", got)
	}
}

func TestLongPollAcrossReplicas(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "lp", nil)
	type result struct {
		msgs []map[string]any
		took time.Duration
	}
	done := make(chan result, 1)
	waiting := make(chan struct{})
	go func() {
		close(waiting)
		start := time.Now()
		msgs := tn.b.receive(t, "lp", map[string]any{"waitSeconds": 20})
		done <- result{msgs, time.Since(start)}
	}()
	<-waiting
	// The receive on B may not be waiting yet when A sends; then it finds the message at once,
	// which is equally correct. Either way it must not sit out its 20 s.
	tn.a.send(t, "lp", "wake")
	select {
	case r := <-done:
		if len(r.msgs) != 1 || r.msgs[0]["body"] != "wake" {
			t.Fatalf("long poll answered %v", r.msgs)
		}
		t.Logf("long poll on B answered %s after the send on A", r.took)
	case <-time.After(15 * time.Second):
		t.Fatal("a send on replica A did not wake the receive waiting on replica B")
	}
}

func TestDeleteWakesWaiters(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "doomed", nil)
	done := make(chan resp, 1)
	go func() { done <- tn.b.do("POST", "/v1/queues/doomed/receive", map[string]any{"waitSeconds": 20}) }()
	// Delete once B's receive is parked in its long poll, so the deletion must wake it.
	deadline := time.Now().Add(10 * time.Second)
	for w.waiters() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the receive never started waiting")
		}
		time.Sleep(5 * time.Millisecond) // no event marks "request is parked"; poll the counter
	}
	tn.a.do("DELETE", "/v1/queues/doomed", nil).must(t, 204)
	select {
	case r := <-done:
		r.fails(t, 404, "not_found", "")
	case <-time.After(10 * time.Second):
		t.Fatal("waiting receive on a deleted queue did not answer")
	}
}

func TestBadRequests(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	tn.queue(t, "bad", nil)
	c.doCT("POST", "/v1/queues/bad/messages", `{"messages":[{"body":"x"}]}`, "text/plain").fails(t, 415, "unsupported_media_type", "")
	c.do("POST", "/v1/queues/bad/messages", `{"messages":[`).fails(t, 400, "invalid_argument", "")
	c.do("POST", "/v1/queues/bad/messages", `[]`).fails(t, 400, "invalid_argument", "")
	c.do("POST", "/v1/queues/bad/messages", `{"messages":[{"body":"x"}],"extra":1}`).fails(t, 400, "invalid_argument", "extra")
	c.do("POST", "/v1/queues/bad/messages", `{"messages":[]}`).fails(t, 400, "invalid_argument", "messages")
	eleven := make([]any, 11)
	for i := range eleven {
		eleven[i] = map[string]any{"body": "x"}
	}
	c.do("POST", "/v1/queues/bad/messages", map[string]any{"messages": eleven}).fails(t, 400, "invalid_argument", "messages")
	huge := `{"messages":[{"body":"` + strings.Repeat("a", 3<<20) + `"}]}`
	c.do("POST", "/v1/queues/bad/messages", huge).fails(t, 413, "payload_too_large", "")
	// Invalid UTF-8 and a lone surrogate fail that message only; nothing is stored for them.
	r := c.do("POST", "/v1/queues/bad/messages", []byte("{\"messages\":[{\"body\":\"ok\"},{\"body\":\"\xff\xfe\"},{\"body\":\"\\ud800\"},{\"body\":\"x\",\"attributes\":{\"a\":\"\\udc00\"}}]}")).must(t, 200)
	if len(r.list("messages")) != 1 || len(r.list("failed")) != 3 {
		t.Fatalf("utf-8 send: %s", r.raw)
	}
	if n := c.counts(t, "bad")["visible"]; n != 1.0 {
		t.Fatalf("stored %v messages, want 1", n)
	}
	for _, bad := range []struct {
		body  string
		field string
	}{
		{`{"maxMessages":11}`, "maxMessages"}, {`{"maxMessages":0}`, "maxMessages"}, {`{"waitSeconds":21}`, "waitSeconds"},
		{`{"visibilityTimeoutSeconds":43201}`, "visibilityTimeoutSeconds"}, {`{"maxMessages":"2"}`, "maxMessages"}, {`{"wait":1}`, "wait"},
	} {
		c.do("POST", "/v1/queues/bad/receive", bad.body).fails(t, 400, "invalid_argument", bad.field)
	}
	c.do("GET", "/v1/queues/bad/messages?limit=101", nil).fails(t, 400, "invalid_argument", "limit")
	c.do("GET", "/v1/queues/bad/groups", nil).fails(t, 400, "invalid_argument", "")
	c.do("DELETE", "/v1/queues/bad/groups/g1", nil).fails(t, 400, "invalid_argument", "")
	c.do("GET", "/v1/nothing-here", nil).fails(t, 404, "not_found", "")
	c.do("PUT", "/v1/queues/bad", map[string]any{}).fails(t, 405, "method_not_allowed", "")
	c.as("").do("POST", "/v1/receipts/ack", fmt.Sprintf(`{"receiptHandle":%q}`, strings.Repeat("A", 5000))).fails(t, 400, "receipt_handle_invalid", "receiptHandle")
}

func TestProbes(t *testing.T) {
	c := newClient(t, w.a, "")
	c.do("GET", "/healthz", nil).must(t, 200)
	if r := c.do("GET", "/readyz", nil).must(t, 200); r.str("status") != "ready" {
		t.Fatalf("readyz: %s", r.raw)
	}
	// Metrics and pprof are on the admin listener only (tests/attacks checks that one).
	for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/goroutine"} {
		c.do("GET", path, nil).fails(t, 404, "not_found", "")
	}
}
