package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// throttleHit is one push as the throttling endpoint saw it, and what it answered.
type throttleHit struct {
	path       string
	ids        []string
	counts     []float64 // each message's receiveCount, as pushed
	status     int
	retryAfter string
}

// throttleEndpoint answers each push with what answer decides for it (under its lock) and
// reports every hit on hits, once answered.
func throttleEndpoint(t *testing.T, answer func(path string, ids []string) (status int, retryAfter string)) (*httptest.Server, chan throttleHit) {
	hits := make(chan throttleHit, 1000)
	var mu sync.Mutex
	ep := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b struct {
			Messages []struct {
				MessageID    string  `json:"messageId"`
				ReceiveCount float64 `json:"receiveCount"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Errorf("push body %q: %v", raw, err)
		}
		h := throttleHit{path: r.URL.Path}
		for _, m := range b.Messages {
			h.ids, h.counts = append(h.ids, m.MessageID), append(h.counts, m.ReceiveCount)
		}
		mu.Lock()
		h.status, h.retryAfter = answer(h.path, h.ids)
		mu.Unlock()
		if h.retryAfter != "" {
			rw.Header().Set("Retry-After", h.retryAfter)
		}
		rw.WriteHeader(h.status)
		hits <- h
	}))
	t.Cleanup(ep.Close)
	return ep, hits
}

// nextHit awaits the endpoint's next hit.
func nextHit(t *testing.T, hits chan throttleHit, what string) throttleHit {
	t.Helper()
	select {
	case h := <-hits:
		return h
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no push within 30 s", what)
		return throttleHit{}
	}
}

// awaitCounts polls the queue's counts (no event crosses to this process) until done says
// they are what the test waits for.
func awaitCounts(t *testing.T, c *client, queue string, done func(map[string]any) bool) map[string]any {
	t.Helper()
	var n map[string]any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n = c.counts(t, queue); done(n) {
			return n
		}
	}
	t.Fatalf("queue %s: counts %v after 30 s", queue, n)
	return nil
}

func emptyCounts(n map[string]any) bool {
	return n["visible"] == 0.0 && n["inFlight"] == 0.0 && n["delayed"] == 0.0
}

// TestPushThrottleStorm: on `api` with a separate pusher, and on `serve`, an endpoint that
// answers 429 and 503 with Retry-After to every push until each message has been throttled 4
// times — twice its queue's maxReceiveCount — and then 200: nothing is dead-lettered, every
// message is pushed with receiveCount 1 each time (throttles are not counted) and acknowledged
// exactly once, and the health shows the throttle (the Retry-After in force while it lasts,
// the last error, a flow-control limit below maxInFlight).
func TestPushThrottleStorm(t *testing.T) {
	srv, srvA, srvB := pushServers(t)
	const throttlesEach, longHold = 4, 5
	throttled, acked := map[string]int{}, map[string]int{}
	var throttledHits int
	ep, hits := throttleEndpoint(t, func(_ string, ids []string) (int, string) {
		lagging := false
		for _, id := range ids {
			lagging = lagging || throttled[id] < throttlesEach
		}
		if !lagging {
			for _, id := range ids {
				acked[id]++
			}
			return 200, ""
		}
		for _, id := range ids {
			throttled[id]++
		}
		throttledHits++
		status := []int{429, 503}[throttledHits%2]
		if throttledHits == 3 { // one long enough for the test to read it in the health
			return status, fmt.Sprint(longHold)
		}
		return status, "0"
	})

	tn := newTenantOn(t, srvA, srvB)
	op := newClient(t, srv, tn.token)
	dlq := tn.queue(t, "storm-dlq", nil)
	tn.queue(t, "storm", map[string]any{"maxCancels": 50, "redrive": map[string]any{"deadLetterQueue": dlq.str("slug"), "maxReceiveCount": 2}})
	path := "/v1/queues/storm/subscription"
	op.do("POST", path, map[string]any{"endpoint": ep.URL + "/storm", "timeoutSeconds": 5}).must(t, 201)
	sent := tn.a.send(t, "storm", "m1", "m2", "m3", "m4", "m5")

	delivered := 0
	for delivered < len(sent) {
		h := nextHit(t, hits, fmt.Sprintf("%d of %d delivered", delivered, len(sent)))
		for i, c := range h.counts {
			if c != 1 {
				t.Fatalf("message %s pushed with receiveCount %v after throttles, want 1", h.ids[i], c)
			}
		}
		if h.status == 200 {
			delivered += len(h.ids)
		}
		if h.retryAfter == fmt.Sprint(longHold) {
			awaitThrottleInHealth(t, op, path, hits)
		}
	}
	awaitCounts(t, tn.a, "storm", emptyCounts)
	if n := tn.a.counts(t, "storm-dlq"); !emptyCounts(n) {
		t.Fatalf("the dead-letter queue holds %v after a Retry-After storm", n)
	}
	for _, id := range sent {
		if acked[id] != 1 || throttled[id] < throttlesEach {
			t.Fatalf("message %s: acknowledged %d times after %d throttles, want once after ≥ %d", id, acked[id], throttled[id], throttlesEach)
		}
	}
	if len(acked) != len(sent) {
		t.Fatalf("acknowledged %v, sent %v", acked, sent)
	}

	// The health log counts an attempt once its messages are settled: await the last success.
	got := awaitHealth(t, op, path, func(h map[string]any) bool { return h["lastSuccessAt"] != nil && h["consecutiveFailures"] == 0.0 })
	h, _ := got.body["health"].(map[string]any)
	lastErr, _ := h["lastError"].(map[string]any)
	if got.str("state") != "active" || h["lastSuccessAt"] == nil || h["consecutiveFailures"] != 0.0 || lastErr == nil ||
		(lastErr["status"] != 429.0 && lastErr["status"] != 503.0) || !strings.Contains(fmt.Sprint(lastErr["message"]), "Retry-After") {
		t.Fatalf("health after the storm: %s", got.raw)
	}
	if limit, _ := h["flowControlLimit"].(float64); limit < 1 || limit >= 10 {
		t.Fatalf("flow-control limit %v after %d throttles and a few successes, want below maxInFlight 10: %s", h["flowControlLimit"], throttledHits, got.raw)
	}
	if n, _ := h["attempts5m"].(float64); int(n) < throttledHits+1 || h["successRate5m"].(float64) >= 1 {
		t.Fatalf("5-minute figures after %d throttles: %s", throttledHits, got.raw)
	}
}

// awaitThrottleInHealth polls the subscription until its health shows a Retry-After in force
// (the pusher records it right after the attempt); the next push, due when the hold ends,
// must not come first.
func awaitThrottleInHealth(t *testing.T, op *client, path string, hits chan throttleHit) {
	t.Helper()
	for {
		got := op.do("GET", path, nil).must(t, 200)
		h, _ := got.body["health"].(map[string]any)
		if until, _ := h["throttledUntil"].(string); until != "" {
			return
		}
		select {
		case hit := <-hits:
			t.Fatalf("pushed again (%v) before the health showed the throttle: %s", hit.ids, got.raw)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// awaitHealth polls the subscription until its health satisfies ok (the health log is written
// after an attempt's messages settle, so it trails what the endpoint and the queue saw).
func awaitHealth(t *testing.T, op *client, path string, ok func(map[string]any) bool) resp {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := op.do("GET", path, nil).must(t, 200)
		if h, _ := got.body["health"].(map[string]any); ok(h) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("health never reached the state awaited: %s", got.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPushThrottlePastMaxCancels: past the queue's maxCancels a throttle counts like any retry
// (docs/push.md, "Throttling"): with maxCancels 2 and maxReceiveCount 3, an endpoint that
// always answers 429 with Retry-After sees the message with receiveCount 1, 1, 1 (two
// uncounted returns, then the first counted one), 2, 3, and then it is dead-lettered for
// maxReceiveCount — never for max_cancels — on both backends.
func TestPushThrottlePastMaxCancels(t *testing.T) {
	srv, srvA, srvB := pushServers(t)
	ep, hits := throttleEndpoint(t, func(string, []string) (int, string) { return 429, "0" })
	tn := newTenantOn(t, srvA, srvB)
	op := newClient(t, srv, tn.token)
	dlq := tn.queue(t, "past-dlq", nil)
	tn.queue(t, "past", map[string]any{"maxCancels": 2, "redrive": map[string]any{"deadLetterQueue": dlq.str("slug"), "maxReceiveCount": 3}})
	op.do("POST", "/v1/queues/past/subscription", map[string]any{"endpoint": ep.URL + "/past", "timeoutSeconds": 5}).must(t, 201)
	id := tn.a.send(t, "past", "asks for time forever")[0]

	want := []float64{1, 1, 1, 2, 3}
	var counts []float64
	for range want {
		h := nextHit(t, hits, fmt.Sprintf("after receive counts %v", counts))
		if len(h.ids) != 1 || h.ids[0] != id {
			t.Fatalf("pushed %v, want %s", h.ids, id)
		}
		counts = append(counts, h.counts[0])
	}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("receive counts pushed %v, want %v", counts, want)
	}
	moved := tn.a.receive(t, "past-dlq", map[string]any{"waitSeconds": 20})
	if len(moved) != 1 || moved[0]["messageId"] != id {
		t.Fatalf("dead-letter queue gave %v, want %s", moved, id)
	}
	if dl, _ := moved[0]["deadLetter"].(map[string]any); dl["reason"] != "maxReceiveCount" {
		t.Fatalf("dead-lettered with %v, want reason maxReceiveCount (a throttle is never a max_cancels)", moved[0]["deadLetter"])
	}
	select {
	case h := <-hits:
		t.Fatalf("pushed again after %v: %+v", counts, h)
	default:
	}
	awaitCounts(t, tn.a, "past", emptyCounts)
}
