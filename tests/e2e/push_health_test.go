package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPushHealthDisableResume: on `api` with a separate pusher, and on `serve`, a subscription
// whose every attempt fails for its disableAfterSeconds (1 s here, on the real clock) becomes
// disabled with a reason, its health showing the failures; PATCH {"state":"active"} resumes it
// with a new failure window, and the message that waited is pushed.
func TestPushHealthDisableResume(t *testing.T) {
	srv, srvA, srvB := pushServers(t)
	var answer atomic.Int32
	answer.Store(500)
	ep := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.WriteHeader(int(answer.Load()))
	}))
	defer ep.Close()

	tn := newTenantOn(t, srvA, srvB)
	op := newClient(t, srv, tn.token)
	tn.queue(t, "health", nil)
	path := "/v1/queues/health/subscription"
	op.do("POST", path, map[string]any{"endpoint": ep.URL, "disableAfterSeconds": -1}).fails(t, 400, "invalid_argument", "disableAfterSeconds")
	created := op.do("POST", path, map[string]any{"endpoint": ep.URL + "/hook", "timeoutSeconds": 5}).must(t, 201)
	if created.body["disableAfterSeconds"] != 432000.0 || created.str("state") != "active" {
		t.Fatalf("defaults: %s", created.raw)
	}
	op.do("PATCH", path, map[string]any{"state": "paused"}).fails(t, 400, "invalid_argument", "state")
	op.do("PATCH", path, map[string]any{"disableAfterSeconds": 2592001}).fails(t, 400, "invalid_argument", "disableAfterSeconds")
	op.do("PATCH", path, map[string]any{"disableAfterSeconds": 1}).must(t, 200)
	tn.a.send(t, "health", "waits")

	// The pusher disables it after its failures span a second (backoff 0.5–1 s, then 1–2 s);
	// no event reaches this process, so it polls.
	var got resp
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = op.do("GET", path, nil).must(t, 200); got.str("state") == "disabled" {
			break
		}
	}
	h, _ := got.body["health"].(map[string]any)
	if got.str("state") != "disabled" || !strings.Contains(got.str("disabledReason"), "status 500") || got.str("disabledAt") == "" || h == nil {
		t.Fatalf("not disabled after 30 s of failures: %s", got.raw)
	}
	lastErr, _ := h["lastError"].(map[string]any)
	if h["successRate5m"] != 0.0 || h["attempts5m"].(float64) < 2 || h["consecutiveFailures"].(float64) < 2 ||
		h["failingSince"] == nil || h["lastSuccessAt"] != nil || lastErr["status"] != 500.0 || lastErr["error"] != "http_status" {
		t.Fatalf("health of a disabled subscription: %s", got.raw)
	}
	if c := tn.a.counts(t, "health"); c["visible"].(float64)+c["inFlight"].(float64) != 1 {
		t.Fatalf("the message does not wait in the queue: %v", c)
	}

	answer.Store(204)
	resumed := op.do("PATCH", path, map[string]any{"state": "active"}).must(t, 200)
	if resumed.str("state") != "active" || resumed.body["disabledReason"] != nil {
		t.Fatalf("resumed: %s", resumed.raw)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = op.do("GET", path, nil).must(t, 200)
		if h, _ = got.body["health"].(map[string]any); h["lastSuccessAt"] != nil {
			break
		}
	}
	if h["lastSuccessAt"] == nil || h["consecutiveFailures"] != 0.0 || h["failingSince"] != nil || got.str("state") != "active" {
		t.Fatalf("health after the resume: %s", got.raw)
	}
	if r := h["successRate5m"].(float64); r <= 0 || r >= 1 {
		t.Fatalf("5-minute success rate %v after failures and a success", r)
	}
	if c := tn.a.counts(t, "health"); c["visible"] != 0.0 || c["inFlight"] != 0.0 {
		t.Fatalf("counts after the resume: %v", c)
	}
}
