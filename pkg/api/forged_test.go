package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
)

func ackAs(t *testing.T, h http.Handler, remote, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("POST", "/v1/receipts/ack", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func errCode(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var b struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &b)
	return b.Error.Code
}

// A source presenting forged handles is refused with 429 once over its burst, until the bucket
// refills; other sources are not affected; X-Forwarded-For does not pick the bucket.
func TestForgedHandlesPerSource(t *testing.T) {
	ring, err := signingkeys.Generate("t")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Config{Auth: auth.New(ring, "", clk.Now), Receipts: receipt.NewSigner(ring), Clock: clk,
		Registry: prometheus.NewRegistry(), ForgedHandles: ForgedHandleLimit{PerSecond: 2, Burst: 5}})
	h := s.Handler()
	const forged = `{"receiptHandle":"not-a-handle"}`
	for i := range 5 {
		if rec := ackAs(t, h, "198.51.100.7:1234", forged); rec.Code != 400 || errCode(t, rec) != "receipt_handle_invalid" {
			t.Fatalf("forgery %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec := ackAs(t, h, "198.51.100.7:1234", forged)
	if rec.Code != 429 || errCode(t, rec) != "rate_limited" || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("over the burst: %d %s (Retry-After %q)", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
	// A batch of forgeries is charged per handle.
	batch := `{"receiptHandles":["a","b","c","d"]}`
	if rec := ackAs(t, h, "203.0.113.9:1", batch); rec.Code != 200 {
		t.Fatalf("other source's batch: %d %s", rec.Code, rec.Body)
	}
	if rec := ackAs(t, h, "203.0.113.9:1", batch); rec.Code != 200 {
		t.Fatalf("other source's second batch: %d %s", rec.Code, rec.Body)
	}
	if rec := ackAs(t, h, "203.0.113.9:1", batch); rec.Code != 429 {
		t.Fatalf("after 8 forged handles in batches: %d %s", rec.Code, rec.Body)
	}
	// X-Forwarded-For is the caller's to write: it does not choose the bucket.
	req := httptest.NewRequest("POST", "/v1/receipts/ack", strings.NewReader(forged))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", "192.0.2.1")
	req.RemoteAddr = "198.51.100.7:999"
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 429 {
		t.Fatalf("X-Forwarded-For escaped the limit: %d", rec.Code)
	}
	clk.Advance(time.Second)
	if rec := ackAs(t, h, "198.51.100.7:1234", forged); rec.Code != 400 {
		t.Fatalf("after refilling: %d %s", rec.Code, rec.Body)
	}
}

// However many sources forge, the limiter tracks at most MaxSources.
func TestForgedHandlesBoundedMemory(t *testing.T) {
	clk := clock.NewFake(time.Now())
	l := newSourceBuckets(ForgedHandleLimit{PerSecond: 1, Burst: 2, MaxSources: 100}, clk.Now)
	for i := range 10_000 {
		l.charge(netip.MustParseAddr("10.0."+strconv.Itoa(i/256%256)+"."+strconv.Itoa(i%256)), 1)
		if len(l.m) > 100 {
			t.Fatalf("%d sources tracked after %d; want at most 100", len(l.m), i+1)
		}
	}
	// IPv6 sources share a bucket per /64.
	l.charge(netip.MustParseAddr("2001:db8:1:2::1"), 0)
	src := func(remote string) netip.Addr {
		c := New(Config{Registry: prometheus.NewRegistry()}).e.NewContext(httptest.NewRequest("GET", "/", nil), httptest.NewRecorder())
		c.Request().RemoteAddr = remote
		return source(c)
	}
	if a, b := src("[2001:db8:1:2::1]:5"), src("[2001:db8:1:2:ffff::9]:6"); a != b {
		t.Fatalf("one /64, two buckets: %v %v", a, b)
	}
	if a, b := src("[::ffff:198.51.100.7]:5"), src("198.51.100.7:6"); a != b {
		t.Fatalf("IPv4-mapped and IPv4: %v %v", a, b)
	}
}

// Issue 31: a full table is not wiped. A source over its budget stays over it however many
// other sources are rotated through; while no tracked bucket has refilled, new sources share
// one overflow bucket (so they too are bounded); once buckets refill, they make room.
func TestForgedHandlesRotationKeepsOverBudget(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l := newSourceBuckets(ForgedHandleLimit{PerSecond: 1, Burst: 2, MaxSources: 100}, clk.Now)
	forger := netip.MustParseAddr("198.51.100.7")
	l.charge(forger, 3)
	if l.wait(forger) == 0 {
		t.Fatal("over its burst, the forger need not wait")
	}
	addr := func(i int) netip.Addr {
		return netip.MustParseAddr("10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255))
	}
	for i := range 10_000 {
		l.charge(addr(i), 1)
		if len(l.m) > 100 {
			t.Fatalf("%d sources tracked; want at most 100", len(l.m))
		}
	}
	if l.wait(forger) == 0 {
		t.Fatal("rotating 10,000 sources reset the forger's count")
	}
	// The new sources beyond the table shared the overflow bucket: it is spent.
	if l.wait(addr(20_000)) == 0 {
		t.Fatal("an untracked source was not charged to the overflow bucket")
	}
	// Once the tracked buckets refill, they are forgotten and new sources are tracked again.
	clk.Advance(10 * time.Second)
	l.charge(addr(30_000), 1)
	if _, ok := l.m[addr(30_000)]; !ok || l.wait(addr(30_000)) != 0 {
		t.Fatalf("after the buckets refilled: tracked %v, wait %v", ok, l.wait(addr(30_000)))
	}
}
