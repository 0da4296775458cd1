package pusher

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func TestCheckAddr(t *testing.T) {
	blocked := []string{
		"127.0.0.1", "127.1.2.3", "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.254",
		"192.168.1.1", "169.254.169.254", "169.254.0.1", "100.64.0.1", "100.127.255.254", "100.100.100.200",
		"192.0.0.192", "192.0.2.1", "198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250",
		"240.0.0.1", "255.255.255.255", "168.63.129.16",
		"::", "::1", "fe80::1", "fe80::1%eth0", "fc00::1", "fd00::1", "fd00:ec2::254", "fec0::1", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:8.8.8.8", "::127.0.0.1", "64:ff9b::7f00:1", "64:ff9b::808:808",
		"64:ff9b:1::1", "2002:7f00:1::1", "2001::1", "2001:0::1", "2001:db8::1", "100::1",
	}
	for _, s := range blocked {
		if err := CheckAddr(netip.MustParseAddr(s)); err == nil {
			t.Errorf("%s: allowed, want refused", s)
		}
	}
	allowed := []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.1", "172.32.0.1", "11.0.0.1",
		"2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "2001:4860:4860::8888"}
	for _, s := range allowed {
		if err := CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s: refused (%v), want allowed", s, err)
		}
	}
	if err := CheckAddr(netip.Addr{}); err == nil {
		t.Error("the zero address is allowed")
	}
}

func TestDialControl(t *testing.T) {
	for _, c := range []struct {
		network, addr string
		ok            bool
	}{
		{"tcp4", "127.0.0.1:443", false}, {"tcp6", "[::1]:443", false}, {"tcp4", "169.254.169.254:80", false},
		{"tcp6", "[::ffff:127.0.0.1]:443", false}, {"tcp4", "8.8.8.8:443", true}, {"tcp6", "[2606:4700:4700::1111]:8443", true},
		{"udp", "8.8.8.8:53", false}, {"tcp", "not-an-address", false},
	} {
		err := dialControl(c.network, c.addr, nil)
		if (err == nil) != c.ok {
			t.Errorf("%s %s: err %v, want ok=%v", c.network, c.addr, err, c.ok)
		}
	}
}

func TestValidateEndpoint(t *testing.T) {
	for _, c := range []struct {
		url     string
		private bool
		ok      bool
	}{
		{"https://example.com/hook", false, true},
		{"https://example.com:8443/hook?x=1", false, true},
		{"https://8.8.8.8/hook", false, true},
		{"http://example.com/hook", false, false},
		{"http://example.com/hook", true, true},
		{"ftp://example.com/", false, false},
		{"https://127.0.0.1/", false, false},
		{"https://[::1]/", false, false},
		{"https://10.0.0.1/", false, false},
		{"https://169.254.169.254/latest", false, false},
		{"https://[::ffff:127.0.0.1]/", false, false},
		{"https://localhost/", false, false},
		{"https://metadata.google.internal/", false, false},
		{"https://2130706433/", false, false},
		{"https://user:pw@example.com/", false, false},
		{"https://example.com/#frag", false, false},
		{"https:///nohost", false, false},
		{"/relative", false, false},
		{"https://example.com:0/", false, false},
		{"https://example.com:99999/", false, false},
		{"http://127.0.0.1:8080/", true, true},
		{"https://" + strings.Repeat("a", 2050) + ".com/", false, false},
	} {
		err := ValidateEndpoint(c.url, c.private)
		if (err == nil) != c.ok {
			t.Errorf("%q (private %v): err %v, want ok=%v", c.url, c.private, err, c.ok)
		}
	}
}

// TestSignatureVerifiesWithReferenceLibrary checks our signatures with the Standard Webhooks
// reference verifier, for each secret of a rotation.
func TestSignatureVerifiesWithReferenceLibrary(t *testing.T) {
	cur, prev := NewSecret(), NewSecret()
	if !strings.HasPrefix(cur, "whsec_") || cur == prev {
		t.Fatalf("secrets %q %q", cur, prev)
	}
	body := []byte(`{"subscription":"qsb_x","messages":[]}`)
	ts := time.Now().Unix()
	sig := Signature([]string{cur, prev}, "attempt-1", ts, body)
	if n := len(strings.Fields(sig)); n != 2 {
		t.Fatalf("signature header %q has %d signatures, want 2", sig, n)
	}
	h := http.Header{}
	h.Set("webhook-id", "attempt-1")
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	for _, s := range []string{cur, prev} {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Fatalf("reference verifier rejects: %v", err)
		}
		if err := wh.Verify(append(body, ' '), h); err == nil {
			t.Fatal("reference verifier accepts a changed body")
		}
	}
	other, _ := standardwebhooks.NewWebhook(NewSecret())
	if err := other.Verify(body, h); err == nil {
		t.Fatal("another secret verifies")
	}
	// The reference signer and ours agree byte for byte.
	wh, _ := standardwebhooks.NewWebhook(cur)
	ref, err := wh.Sign("attempt-1", time.Unix(ts, 0), body)
	if err != nil {
		t.Fatal(err)
	}
	if got := Signature([]string{cur}, "attempt-1", ts, body); got != ref {
		t.Fatalf("signature %q, reference %q", got, ref)
	}
}

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
		kind     verdictKind
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
		if v.kind != c.kind || v.errClass != c.errClass || v.slowDown != c.slow {
			t.Errorf("%s: kind %d class %q slow %v (%s), want kind %d class %q slow %v", c.name, v.kind, v.errClass, v.slowDown, v.detail, c.kind, c.errClass, c.slow)
		}
	}
	if v := classify(429, ra("7"), nil, false, batch, now); v.retryAfter != 7*time.Second {
		t.Errorf("Retry-After 7: %s", v.retryAfter)
	}
	if v := classify(503, ra(now.Add(90*time.Second).Format(http.TimeFormat)), nil, false, batch, now); v.retryAfter != 90*time.Second {
		t.Errorf("Retry-After date: %s", v.retryAfter)
	}
	if v := classify(429, ra("99999999"), nil, false, batch, now); v.retryAfter != 12*time.Hour {
		t.Errorf("huge Retry-After: %s", v.retryAfter)
	}
}

func TestFlowAIMD(t *testing.T) {
	f := newFlow(8)
	ctx := context.Background()
	take := func(n int) {
		for range n {
			if err := f.acquire(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	limit := func() int { l, _ := f.state(); return l }
	take(8)
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	if err := f.acquire(short); err == nil {
		t.Fatal("a ninth batch got a slot")
	}
	cancel()
	f.settle(flowThrottle) // 8 → 4
	f.settle(flowThrottle) // 4 → 2
	f.settle(flowThrottle) // 2 → 1
	f.settle(flowThrottle) // 1 → 1
	if l := limit(); l != 1 {
		t.Fatalf("after four throttles: limit %d, want 1", l)
	}
	f.settle(flowFailure) // other failures change nothing
	f.settle(flowNone)
	if l := limit(); l != 1 {
		t.Fatalf("after a plain failure: limit %d, want 1", l)
	}
	_, inFlight := f.state()
	if inFlight != 2 {
		t.Fatalf("in flight %d, want 2", inFlight)
	}
	f.settle(flowSuccess) // 1 → 2
	f.settle(flowSuccess) // 2 → 3
	if l := limit(); l != 3 {
		t.Fatalf("after two successes: limit %d, want 3", l)
	}
	for range 10 {
		take(1)
		f.settle(flowSuccess)
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
