package pusher

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/webhook"
)

func TestBackoffSchedule(t *testing.T) {
	lo := func(int64) int64 { return 0 }
	hi := func(n int64) int64 { return n }
	var asked []int64
	mid := func(n int64) int64 { asked = append(asked, n); return n / 2 }
	bases := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second,
		64 * time.Second, 128 * time.Second, 256 * time.Second, 512 * time.Second, 10 * time.Minute, 10 * time.Minute}
	for i, base := range bases {
		attempt := i + 1
		if got := Backoff(attempt, lo); got != base/2 {
			t.Errorf("attempt %d, no jitter: %s, want %s", attempt, got, base/2)
		}
		if got := Backoff(attempt, hi); got != base {
			t.Errorf("attempt %d, full jitter: %s, want %s", attempt, got, base)
		}
		asked = nil
		if got := Backoff(attempt, mid); got != base/2+base/4 || len(asked) != 1 || asked[0] != int64(base/2) {
			t.Errorf("attempt %d: %s (jitter asked for %v), want %s", attempt, got, asked, base/2+base/4)
		}
	}
	if got := Backoff(1000, hi); got != 10*time.Minute {
		t.Errorf("attempt 1000: %s", got)
	}
	if got := Backoff(0, hi); got != time.Second {
		t.Errorf("attempt 0: %s", got)
	}
}

func TestClassify(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := map[string]bool{"m1": true, "m2": true}
	js := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	html := http.Header{"Content-Type": {"text/html"}}
	none := http.Header{}
	ra := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	for _, c := range []struct {
		name     string
		status   int
		h        http.Header
		body     string
		overflow bool
		kind     webhook.VerdictKind
		errClass string
		slow     bool
	}{
		{"200 empty", 200, none, "", false, ackAll, "", false},
		{"201 empty", 201, js, "  ", false, ackAll, "", false},
		{"204", 204, none, "", false, ackAll, "", false},
		{"200 html", 200, html, "<p>ok</p>", false, ackAll, "", false},
		{"200 html over the cap", 200, html, "<p>", true, ackAll, "", false},
		{"202 empty", 202, none, "", false, deferAll, "", false},
		{"202 text", 202, html, "queued", false, deferAll, "", false},
		{"200 results", 200, js, `{"results":[{"messageId":"m1","outcome":"retry","retryAfterSeconds":30}]}`, false, perMessage, "", false},
		{"202 results", 202, js, `{"results":[{"messageId":"m2","outcome":"dead-letter","reason":"bad"}]}`, false, perMessage, "", false},
		{"200 empty results", 200, js, `{"results":[]}`, false, perMessage, "", false},
		{"200 other JSON", 200, js, `{"ok":true}`, false, failed, ErrInvalidResponse, false},
		{"200 JSON array", 200, js, `[1]`, false, failed, ErrInvalidResponse, false},
		{"200 broken JSON", 200, js, `{"results":`, false, failed, ErrInvalidResponse, false},
		{"200 JSON over the cap", 200, js, `{"results":[]}`, true, failed, ErrInvalidResponse, false},
		{"200 unknown message", 200, js, `{"results":[{"messageId":"zz","outcome":"ack"}]}`, false, failed, ErrInvalidResponse, false},
		{"200 unknown outcome", 200, js, `{"results":[{"messageId":"m1","outcome":"nack"}]}`, false, failed, ErrInvalidResponse, false},
		{"200 duplicate", 200, js, `{"results":[{"messageId":"m1","outcome":"ack"},{"messageId":"m1","outcome":"retry"}]}`, false, failed, ErrInvalidResponse, false},
		{"200 retryAfter on ack", 200, js, `{"results":[{"messageId":"m1","outcome":"ack","retryAfterSeconds":1}]}`, false, failed, ErrInvalidResponse, false},
		{"200 negative retryAfter", 200, js, `{"results":[{"messageId":"m1","outcome":"retry","retryAfterSeconds":-1}]}`, false, failed, ErrInvalidResponse, false},
		{"200 reason on retry", 200, js, `{"results":[{"messageId":"m1","outcome":"retry","reason":"x"}]}`, false, failed, ErrInvalidResponse, false},
		{"200 unknown field", 200, js, `{"results":[{"messageId":"m1","outcome":"retry","retryAfter":5}]}`, false, failed, ErrInvalidResponse, false},
		{"200 extra top-level", 200, js, `{"results":[],"x":1}`, false, failed, ErrInvalidResponse, false},
		{"203 empty", 203, none, "", false, failed, ErrHTTPStatus, false},
		{"301", 301, http.Header{"Location": {"https://127.0.0.1/"}}, "", false, failed, ErrHTTPStatus, false},
		{"400", 400, js, `{"results":[]}`, false, failed, ErrHTTPStatus, false},
		{"500", 500, none, "", false, failed, ErrHTTPStatus, false},
		{"429 Retry-After", 429, ra("7"), "", false, throttled, ErrHTTPStatus, true},
		{"503 Retry-After date", 503, ra(now.Add(90 * time.Second).Format(http.TimeFormat)), "", false, throttled, ErrHTTPStatus, true},
		{"429 no Retry-After", 429, none, "", false, failed, ErrHTTPStatus, true},
		{"503 bad Retry-After", 503, ra("soon"), "", false, failed, ErrHTTPStatus, true},
		{"502 Retry-After", 502, ra("7"), "", false, failed, ErrHTTPStatus, false},
	} {
		v := classify(c.status, c.h, []byte(c.body), c.overflow, batch, now)
		if v.Kind != c.kind || v.ErrClass != c.errClass || v.SlowDown != c.slow {
			t.Errorf("%s: kind %d class %q slow %v (%s), want kind %d class %q slow %v", c.name, v.Kind, v.ErrClass, v.SlowDown, v.Detail, c.kind, c.errClass, c.slow)
		}
	}
	if v := classify(429, ra("7"), nil, false, batch, now); v.RetryAfter != 7*time.Second {
		t.Errorf("Retry-After 7: %s", v.RetryAfter)
	}
	if v := classify(503, ra(now.Add(90*time.Second).Format(http.TimeFormat)), nil, false, batch, now); v.RetryAfter != 90*time.Second {
		t.Errorf("Retry-After date: %s", v.RetryAfter)
	}
	if v := classify(429, ra("99999999"), nil, false, batch, now); v.RetryAfter != 12*time.Hour {
		t.Errorf("huge Retry-After: %s", v.RetryAfter)
	}
}

func TestFlowAIMD(t *testing.T) {
	f := newFlow(8)
	ctx := context.Background()
	take := func(n int) {
		for range n {
			if err := f.admit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	limit := func() int { l, _ := f.state(); return l }
	take(8)
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	if err := f.admit(short); err == nil {
		t.Fatal("a ninth batch got a slot")
	}
	cancel()
	f.done(flowThrottle) // 8 → 4
	f.done(flowThrottle) // 4 → 2
	f.done(flowThrottle) // 2 → 1
	f.done(flowThrottle) // 1 → 1
	if l := limit(); l != 1 {
		t.Fatalf("after four throttles: limit %d, want 1", l)
	}
	f.done(flowFailure) // other failures change nothing
	f.done(flowNone)
	if l := limit(); l != 1 {
		t.Fatalf("after a plain failure: limit %d, want 1", l)
	}
	_, inFlight := f.state()
	if inFlight != 2 {
		t.Fatalf("in flight %d, want 2", inFlight)
	}
	f.done(flowSuccess) // 1 → 2
	f.done(flowSuccess) // 2 → 3
	if l := limit(); l != 3 {
		t.Fatalf("after two successes: limit %d, want 3", l)
	}
	for range 10 {
		take(1)
		f.done(flowSuccess)
	}
	if l := limit(); l != 8 {
		t.Fatalf("recovered to %d, want maxInFlight 8", l)
	}
	f.setMax(3)
	if l := limit(); l != 3 {
		t.Fatalf("after maxInFlight 3: limit %d", l)
	}
	f.setMax(5)
	if l := limit(); l != 5 {
		t.Fatalf("after maxInFlight 5 at full health: limit %d", l)
	}
}
