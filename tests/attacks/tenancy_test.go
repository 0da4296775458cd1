package attacks

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
)

// requestIDs differ between answers; everything else must be identical.
var requestIDField = regexp.MustCompile(`"requestId":"[^"]*"`)

// X11, X43: project A's token on every route of project B's queue answers exactly what a
// queue that does not exist answers — same status, code and body — so nothing reveals that B's
// queue exists; B's queue is unchanged.
func TestCrossTenantMatrix(t *testing.T) {
	_, tokA := project(t)
	_, tokB := project(t)
	queueWithMessage(t, tokB, "secret-b", nil)
	routes := []struct{ method, path string }{
		{"GET", "/v1/queues/%s"}, {"PATCH", "/v1/queues/%s"}, {"DELETE", "/v1/queues/%s"},
		{"POST", "/v1/queues/%s/purge"}, {"POST", "/v1/queues/%s/messages"}, {"POST", "/v1/queues/%s/receive"},
		{"GET", "/v1/queues/%s/messages"}, {"GET", "/v1/queues/%s/groups"}, {"DELETE", "/v1/queues/%s/groups/g"},
		{"GET", "/v1/queues/%s/subscription"}, {"POST", "/v1/queues/%s/subscription"}, {"PATCH", "/v1/queues/%s/subscription"},
		{"DELETE", "/v1/queues/%s/subscription"}, {"POST", "/v1/queues/%s/subscription/rotate-secret"},
		{"GET", "/v1/queues/%s/subscription/attempts"},
	}
	bodies := map[string]any{
		"PATCH /v1/queues/%s":              map[string]any{"delaySeconds": 1},
		"POST /v1/queues/%s/messages":      map[string]any{"messages": []any{map[string]any{"body": "x"}}},
		"POST /v1/queues/%s/receive":       map[string]any{"waitSeconds": 0},
		"POST /v1/queues/%s/subscription":  map[string]any{"endpoint": "https://example.com/hook"},
		"PATCH /v1/queues/%s/subscription": map[string]any{"paused": true},
	}
	for _, r := range routes {
		body := bodies[r.method+" "+r.path]
		other := call(t, r.method, strings.Replace(r.path, "%s", "secret-b", 1), tokA, body)
		none := call(t, r.method, strings.Replace(r.path, "%s", "no-such-queue", 1), tokA, body)
		if other.status != 404 || other.code() != "not_found" {
			t.Errorf("%s %s on another project's queue: %d %s; want 404 not_found", r.method, r.path, other.status, other.code())
		}
		o, n := requestIDField.ReplaceAll(other.raw, nil), requestIDField.ReplaceAll(none.raw, nil)
		if !bytes.Equal(bytes.ReplaceAll(o, []byte("secret-b"), []byte("Q")), bytes.ReplaceAll(n, []byte("no-such-queue"), []byte("Q"))) {
			t.Errorf("%s %s: another project's queue answers %s, a missing one %s", r.method, r.path, other.raw, none.raw)
		}
	}
	// X12: listing with B's queue name as prefix shows A nothing.
	l := call(t, "GET", "/v1/queues?prefix=secret", tokA, nil)
	l.is(t, 200, "", "")
	if qs, _ := l.body["queues"].([]any); len(qs) != 0 {
		t.Errorf("X12: project A lists %d queues named secret*: %s", len(qs), l.raw)
	}
	// B's queue is untouched: its message is still in flight, its settings unchanged.
	g := call(t, "GET", "/v1/queues/secret-b", tokB, nil)
	g.is(t, 200, "", "")
	if c, _ := g.body["counts"].(map[string]any); c["inFlight"] != float64(1) || g.body["delaySeconds"] != float64(0) {
		t.Errorf("B's queue changed: %s", g.raw)
	}
	// A project token on operator routes is 403 before anything is looked up.
	call(t, "GET", "/v1/projects", tokA, nil).is(t, 403, "permission_denied", "")
}

// X13: a revoked token stops working on this replica within the 5 s the spec allows (the
// metadata cache's bound); the test waits for the event, polling.
func TestRevocation(t *testing.T) {
	p, _ := project(t)
	tk := call(t, "POST", "/v1/projects/"+p+"/tokens", operator, map[string]any{"name": "victim", "scopes": []string{"queues:read"}})
	tk.is(t, 201, "", "")
	tok, _ := tk.body["token"].(string)
	id, _ := tk.body["id"].(string)
	call(t, "GET", "/v1/queues", tok, nil).is(t, 200, "", "")
	start := time.Now()
	call(t, "DELETE", "/v1/projects/"+p+"/tokens/"+id, operator, nil).is(t, 204, "", "")
	for {
		a := call(t, "GET", "/v1/queues", tok, nil)
		if a.status == 401 {
			a.is(t, 401, "unauthenticated", "")
			break
		}
		if time.Since(start) > 6*time.Second {
			t.Fatalf("revoked token still accepted after %v", time.Since(start))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("revocation took effect after %v", time.Since(start).Round(time.Millisecond))
}
