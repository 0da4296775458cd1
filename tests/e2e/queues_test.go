package e2e

import (
	"fmt"
	"strings"
	"testing"
)

func TestQueueLifecycle(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	q := tn.queue(t, "orders", nil)
	want := map[string]any{"name": "orders", "type": "standard", "visibilityTimeoutSeconds": 30.0, "retentionSeconds": 345600.0,
		"delaySeconds": 0.0, "receiveWaitSeconds": 0.0, "redrive": nil, "contentBasedDedup": false, "partitions": 1.0}
	for k, v := range want {
		if q.body[k] != v {
			t.Errorf("%s = %v, want %v", k, q.body[k], v)
		}
	}
	id, slug := q.str("id"), q.str("slug")
	for _, ref := range []string{id, strings.ToUpper(id), slug, "orders"} {
		if got := c.do("GET", "/v1/queues/"+ref, nil).must(t, 200).str("id"); got != id {
			t.Fatalf("GET %s = %s", ref, got)
		}
	}
	c.do("GET", "/v1/queues/Orders", nil).fails(t, 404, "not_found", "")
	c.do("GET", "/v1/queues/que_bad", nil).fails(t, 400, "invalid_argument", "queue")
	c.do("POST", "/v1/queues", map[string]any{"name": "orders"}).fails(t, 409, "queue_exists", "name")

	// Every setting out of range names its field.
	for _, bad := range []struct {
		field string
		value any
	}{
		{"visibilityTimeoutSeconds", 43201}, {"visibilityTimeoutSeconds", -1}, {"visibilityTimeoutSeconds", "30"},
		{"retentionSeconds", 59}, {"retentionSeconds", 1209601}, {"delaySeconds", 901}, {"receiveWaitSeconds", 21},
		{"contentBasedDedup", true}, {"contentBasedDedup", "no"}, {"type", "priority"}, {"redrive", 5},
		{"name", ""}, {"name", strings.Repeat("a", 81)}, {"name", "has space"}, {"name", "que_x"},
		{"name", "é"},
	} {
		body := map[string]any{"name": "fine-" + fmt.Sprint(len(bad.field)), bad.field: bad.value}
		c.do("POST", "/v1/queues", body).fails(t, 400, "invalid_argument", bad.field)
	}
	c.do("POST", "/v1/queues", map[string]any{"name": "r", "redrive": map[string]any{"maxReceiveCount": 3}}).fails(t, 400, "invalid_argument", "redrive.deadLetterQueue")
	c.do("POST", "/v1/queues", map[string]any{"name": "r", "redrive": map[string]any{"deadLetterQueue": id, "maxReceiveCount": 0}}).fails(t, 400, "invalid_argument", "redrive.maxReceiveCount")
	c.do("POST", "/v1/queues", map[string]any{"name": "r", "redrive": map[string]any{"deadLetterQueue": id, "maxReceiveCount": 1001}}).fails(t, 400, "invalid_argument", "redrive.maxReceiveCount")
	c.do("POST", "/v1/queues", map[string]any{"name": "r", "redrive": map[string]any{"deadLetterQueue": "00000000-0000-7000-8000-000000000000", "maxReceiveCount": 3}}).fails(t, 404, "not_found", "redrive.deadLetterQueue")

	// PATCH changes any subset; name and type are fixed.
	p := c.do("PATCH", "/v1/queues/orders", map[string]any{"visibilityTimeoutSeconds": 5, "delaySeconds": 2, "receiveWaitSeconds": 1}).must(t, 200)
	if p.body["visibilityTimeoutSeconds"] != 5.0 || p.body["delaySeconds"] != 2.0 || p.body["retentionSeconds"] != 345600.0 {
		t.Fatalf("patch: %s", p.raw)
	}
	c.do("PATCH", "/v1/queues/orders", map[string]any{"name": "other"}).fails(t, 400, "invalid_argument", "name")
	c.do("PATCH", "/v1/queues/orders", map[string]any{"type": "fifo"}).fails(t, 400, "invalid_argument", "type")
	c.do("PATCH", "/v1/queues/orders", map[string]any{"delaySeconds": 1000}).fails(t, 400, "invalid_argument", "delaySeconds")
	c.do("PATCH", "/v1/queues/orders", map[string]any{"redrive": map[string]any{"deadLetterQueue": id, "maxReceiveCount": 2}}).fails(t, 400, "invalid_argument", "redrive.deadLetterQueue")
	// Settings changed on A are seen on B at once (the cache is invalidated).
	if got := tn.b.do("GET", "/v1/queues/"+id, nil).must(t, 200).body["visibilityTimeoutSeconds"]; got != 5.0 {
		t.Fatalf("replica B sees visibilityTimeoutSeconds %v", got)
	}

	// Listing: prefix, pagination.
	for i := range 5 {
		tn.queue(t, fmt.Sprintf("batch-%d", i), nil)
	}
	var names []string
	cursor := ""
	for range 10 {
		path := "/v1/queues?prefix=batch-&limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		l := c.do("GET", path, nil).must(t, 200)
		for _, x := range l.list("queues") {
			names = append(names, x["name"].(string))
		}
		if cursor = l.str("nextCursor"); cursor == "" {
			break
		}
	}
	if strings.Join(names, ",") != "batch-0,batch-1,batch-2,batch-3,batch-4" {
		t.Fatalf("listed %v", names)
	}
	c.do("GET", "/v1/queues?limit=0", nil).fails(t, 400, "invalid_argument", "limit")
	c.do("GET", "/v1/queues?limit=1001", nil).fails(t, 400, "invalid_argument", "limit")
	c.do("GET", "/v1/queues?cursor=not-a-cursor", nil).fails(t, 400, "invalid_argument", "cursor")

	// Delete; the name is free again at once.
	c.do("DELETE", "/v1/queues/batch-0", nil).must(t, 204)
	c.do("GET", "/v1/queues/batch-0", nil).fails(t, 404, "not_found", "")
	c.do("DELETE", "/v1/queues/batch-0", nil).fails(t, 404, "not_found", "")
	if again := tn.queue(t, "batch-0", nil); again.str("id") == "" {
		t.Fatal("name not reusable")
	}
}

func TestTenantIsolation(t *testing.T) {
	owner, other := newTenant(t), newTenant(t)
	q := owner.queue(t, "private", nil)
	owner.a.send(t, "private", "secret")
	missing := other.a.do("GET", "/v1/queues/no-such-queue", nil)
	missing.fails(t, 404, "not_found", "")
	for _, ref := range []string{q.str("id"), q.str("slug"), "private"} {
		for _, call := range []struct{ method, path string }{
			{"GET", ""}, {"PATCH", ""}, {"DELETE", ""}, {"POST", "/purge"}, {"POST", "/messages"},
			{"POST", "/receive"}, {"GET", "/messages"},
		} {
			var body any
			switch call.path {
			case "/messages":
				if call.method == "POST" {
					body = map[string]any{"messages": []any{map[string]any{"body": "x"}}}
				}
			case "":
				if call.method == "PATCH" {
					body = map[string]any{"delaySeconds": 1}
				}
			}
			r := other.a.do(call.method, "/v1/queues/"+ref+call.path, body)
			r.fails(t, 404, "not_found", "")
			if call.path == "" && call.method == "GET" &&
				strings.ReplaceAll(string(r.raw), ref, "X") != strings.ReplaceAll(string(missing.raw), "no-such-queue", "X") {
				t.Fatalf("another project's queue answers differently from a missing one: %s vs %s", r.raw, missing.raw)
			}
		}
	}
	if n := owner.a.counts(t, "private")["visible"]; n != 1.0 {
		t.Fatalf("owner's queue was changed by another tenant: visible=%v", n)
	}
	// A dead-letter queue must be in the same project.
	other.a.do("POST", "/v1/queues", map[string]any{"name": "x", "redrive": map[string]any{"deadLetterQueue": q.str("id"), "maxReceiveCount": 1}}).fails(t, 404, "not_found", "redrive.deadLetterQueue")
}

func TestScopes(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "scoped", nil)
	send := newClient(t, w.a, tn.tokenWith(t, "messages:send"))
	recv := newClient(t, w.a, tn.tokenWith(t, "messages:receive"))
	admin := newClient(t, w.a, tn.tokenWith(t, "queues:admin"))
	send.send(t, "scoped", "m")
	send.do("POST", "/v1/queues/scoped/receive", nil).fails(t, 403, "permission_denied", "")
	send.do("GET", "/v1/queues/scoped", nil).fails(t, 403, "permission_denied", "")
	if got := recv.receive(t, "scoped", nil); len(got) != 1 {
		t.Fatalf("receive-only token got %v", got)
	}
	recv.do("POST", "/v1/queues/scoped/messages", map[string]any{"messages": []any{map[string]any{"body": "x"}}}).fails(t, 403, "permission_denied", "")
	// queues:admin implies queues:read, but not the message scopes.
	admin.do("GET", "/v1/queues/scoped", nil).must(t, 200)
	admin.do("GET", "/v1/queues/scoped/messages?state=inFlight", nil).must(t, 200)
	admin.do("POST", "/v1/queues/scoped/receive", nil).fails(t, 403, "permission_denied", "")
	// Scope is decided before the queue is looked up: a missing queue is still 403.
	send.do("GET", "/v1/queues/no-such-queue", nil).fails(t, 403, "permission_denied", "")
}
