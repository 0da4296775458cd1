package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// meterEvery is the usage meters' flush period in these tests (production: 5 s).
const meterEvery = 200 * time.Millisecond

func (tn *tenant) setLimits(t testing.TB, limits map[string]any) resp {
	t.Helper()
	return tn.op.do("PATCH", "/v1/projects/"+tn.project, map[string]any{"limits": limits}).must(t, 200)
}

func num(t testing.TB, m map[string]any, key string) int64 {
	t.Helper()
	f, ok := m[key].(float64)
	if !ok {
		t.Fatalf("%s: not a number in %v", key, m)
	}
	return int64(f)
}

func obj(r resp, key string) map[string]any { m, _ := r.body[key].(map[string]any); return m }

// TestProjectLimits: the operator reads and sets a project's limits, the tenant reads its own
// project; maxQueues refuses a create over it with 403 quota_exceeded, and a delete makes room.
func TestProjectLimits(t *testing.T) {
	tn := newTenant(t)
	path := "/v1/projects/" + tn.project
	p := tn.op.do("GET", path, nil).must(t, 200)
	lim, use := obj(p, "limits"), obj(p, "usage")
	want := map[string]int64{"maxQueues": 1000, "maxSubscriptions": 100, "maxTopics": 100, "maxStoredBytes": 1 << 30, "requestsPerSecond": 10000, "maxWaitingReceives": 1000}
	for k, v := range want {
		if num(t, lim, k) != v {
			t.Fatalf("default %s = %v, want %d: %s", k, lim[k], v, p.raw)
		}
	}
	if num(t, use, "queues") != 0 || num(t, use, "subscriptions") != 0 || num(t, use, "topics") != 0 || num(t, use, "storedBytes") != 0 {
		t.Fatalf("usage of a new project: %s", p.raw)
	}

	// Validation names the limit.
	op := tn.op
	op.do("PATCH", path, map[string]any{"limits": map[string]any{"maxQueues": -1}}).fails(t, 400, "invalid_argument", "limits.maxQueues")
	op.do("PATCH", path, map[string]any{"limits": map[string]any{"requestsPerSecond": 0}}).fails(t, 400, "invalid_argument", "limits.requestsPerSecond")
	op.do("PATCH", path, map[string]any{"limits": map[string]any{"maxStoredBytes": "1"}}).fails(t, 400, "invalid_argument", "limits.maxStoredBytes")
	op.do("PATCH", path, map[string]any{"limits": map[string]any{"maxQueue": 1}}).fails(t, 400, "invalid_argument", "limits.maxQueue")
	op.do("PATCH", path, map[string]any{"limits": 5}).fails(t, 400, "invalid_argument", "limits")
	op.do("PATCH", path, map[string]any{}).fails(t, 400, "invalid_argument", "limits")
	op.do("PATCH", path, map[string]any{"limits": map[string]any{}, "name": "x"}).fails(t, 400, "invalid_argument", "name")
	op.do("PATCH", "/v1/projects/00000000-0000-7000-8000-000000000000", map[string]any{"limits": map[string]any{"maxQueues": 1}}).fails(t, 404, "not_found", "")
	tn.a.do("PATCH", path, map[string]any{"limits": map[string]any{"maxQueues": 1}}).fails(t, 403, "permission_denied", "")

	set := tn.setLimits(t, map[string]any{"maxQueues": 2, "maxWaitingReceives": 7})
	if l := obj(set, "limits"); num(t, l, "maxQueues") != 2 || num(t, l, "maxWaitingReceives") != 7 || num(t, l, "maxSubscriptions") != 100 {
		t.Fatalf("after PATCH: %s", set.raw)
	}
	tn.queue(t, "one", nil)
	tn.queue(t, "two", nil)
	r := tn.a.do("POST", "/v1/queues", map[string]any{"name": "three"})
	r.fails(t, 403, "quota_exceeded", "")
	if d := obj(resp{body: obj(r, "error")}, "details"); d["limit"] != "maxQueues" {
		t.Fatalf("details.limit: %s", r.raw)
	}
	tn.a.do("GET", "/v1/queues/three", nil).fails(t, 404, "not_found", "")

	// The tenant's own view, with a token of any scope.
	own := newClient(t, w.a, tn.tokenWith(t, "messages:send")).do("GET", "/v1/project", nil).must(t, 200)
	if own.str("id") != tn.project || num(t, obj(own, "usage"), "queues") != 2 || num(t, obj(own, "limits"), "maxQueues") != 2 {
		t.Fatalf("GET /v1/project: %s", own.raw)
	}
	tn.op.do("GET", "/v1/project", nil).fails(t, 403, "permission_denied", "")
	tn.a.as("").do("GET", "/v1/project", nil).fails(t, 401, "unauthenticated", "")

	// A delete makes room; a lowered limit deletes nothing; null returns to the default.
	tn.a.do("DELETE", "/v1/queues/one", nil).must(t, 204)
	tn.queue(t, "three", nil)
	tn.setLimits(t, map[string]any{"maxQueues": 1})
	tn.a.do("POST", "/v1/queues", map[string]any{"name": "four"}).fails(t, 403, "quota_exceeded", "")
	if n := num(t, obj(tn.op.do("GET", path, nil).must(t, 200), "usage"), "queues"); n != 2 {
		t.Fatalf("queues after lowering the limit: %d, want 2", n)
	}
	back := tn.setLimits(t, map[string]any{"maxQueues": nil, "maxWaitingReceives": nil})
	if l := obj(back, "limits"); num(t, l, "maxQueues") != 1000 || num(t, l, "maxWaitingReceives") != 1000 {
		t.Fatalf("after null: %s", back.raw)
	}
	tn.queue(t, "four", nil)
}

// TestQueueQuotaRace: creates racing through both replicas never pass maxQueues.
func TestQueueQuotaRace(t *testing.T) {
	tn := newTenant(t)
	tn.setLimits(t, map[string]any{"maxQueues": 3})
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := tn.a
			if i%2 == 1 {
				c = tn.b
			}
			r := c.do("POST", "/v1/queues", map[string]any{"name": fmt.Sprintf("race-%d", i)})
			mu.Lock()
			codes[r.status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[201] != 3 || codes[403] != 7 {
		t.Fatalf("answers by status %v, want 3 × 201 and 7 × 403", codes)
	}
	if n := len(tn.a.do("GET", "/v1/queues", nil).must(t, 200).list("queues")); n != 3 {
		t.Fatalf("%d queues listed, want 3", n)
	}
}

// TestSubscriptionQuota: maxSubscriptions refuses a subscription over it; deleting one (or its
// queue) makes room.
func TestSubscriptionQuota(t *testing.T) {
	tn := newTenant(t)
	tn.setLimits(t, map[string]any{"maxSubscriptions": 1})
	tn.queue(t, "a", nil)
	tn.queue(t, "b", nil)
	hook := map[string]any{"endpoint": "https://example.com/hook"}
	tn.a.do("POST", "/v1/queues/a/subscription", hook).must(t, 201)
	r := tn.b.do("POST", "/v1/queues/b/subscription", hook)
	r.fails(t, 403, "quota_exceeded", "")
	if !strings.Contains(string(r.raw), `"limit":"maxSubscriptions"`) {
		t.Fatalf("details.limit: %s", r.raw)
	}
	if n := num(t, obj(tn.a.do("GET", "/v1/project", nil).must(t, 200), "usage"), "subscriptions"); n != 1 {
		t.Fatalf("subscriptions = %d, want 1", n)
	}
	tn.a.do("DELETE", "/v1/queues/a", nil).must(t, 204)
	tn.b.do("POST", "/v1/queues/b/subscription", hook).must(t, 201)
}

// TestProjectRateLimit: requestsPerSecond counts every call with the project's tokens, on
// every replica, and the receipt calls on its queues; over it, 429 with Retry-After. Another
// project is not affected.
func TestProjectRateLimit(t *testing.T) {
	tn := newTenant(t)
	other := newTenant(t)
	tn.queue(t, "q", nil)
	tn.a.send(t, "q", "m")
	h := tn.a.receive(t, "q", nil)[0]["receiptHandle"].(string)
	tn.setLimits(t, map[string]any{"requestsPerSecond": 2})
	limited := func(r resp) bool {
		if r.status != http.StatusTooManyRequests {
			return false
		}
		r.fails(t, 429, "rate_limited", "")
		if r.header.Get("Retry-After") == "" {
			t.Fatalf("429 without Retry-After: %s", r.raw)
		}
		return true
	}
	// The replicas share one budget: alternating between them runs out as fast as one would.
	got := false
	for i := 0; i < 40 && !got; i++ {
		c := tn.a
		if i%2 == 1 {
			c = tn.b
		}
		got = limited(c.do("GET", "/v1/queues", nil))
	}
	if !got {
		t.Fatal("40 calls at a limit of 2/s were all admitted")
	}
	// Receipt calls count toward the queue's project.
	got = false
	for i := 0; i < 40 && !got; i++ {
		r := tn.a.as("").do("POST", "/v1/receipts/visibility", map[string]any{"receiptHandle": h, "visibilityTimeoutSeconds": 30})
		got = limited(r)
		if !got && r.status != 204 {
			t.Fatalf("visibility: %d %s", r.status, r.raw)
		}
	}
	if !got {
		t.Fatal("40 receipt calls at a limit of 2/s were all admitted")
	}
	for range 20 {
		other.a.do("GET", "/v1/queues", nil).must(t, 200)
	}
	tn.setLimits(t, map[string]any{"requestsPerSecond": nil})

	// One budget, not one per replica: at 50 a second (burst 50), calls alternating between
	// the replicas until the first refusal were admitted no more than the burst plus what
	// refilled meanwhile (two budgets would admit about twice that).
	fresh := newTenant(t) // no replica has read its limits yet
	fresh.setLimits(t, map[string]any{"requestsPerSecond": 50})
	admitted, start := 0, time.Now()
	for i := 0; i < 1000; i++ {
		c := fresh.a
		if i%2 == 1 {
			c = fresh.b
		}
		if limited(c.do("GET", "/v1/queues", nil)) {
			break
		}
		admitted++
	}
	if refill := int(time.Since(start).Seconds()*50) + 1; admitted > 50+refill || admitted < 40 {
		t.Fatalf("admitted %d calls before the first refusal at 50/s (refill %d)", admitted, refill)
	}
}

// TestWaitingReceives: with maxWaitingReceives long polls parked (on any replica), one more
// answers at once with no messages, never an error; a freed slot can be taken again.
func TestWaitingReceives(t *testing.T) {
	tn := newTenant(t)
	tn.setLimits(t, map[string]any{"maxWaitingReceives": 1})
	tn.queue(t, "q", nil)
	before := w.waiters()
	parked := make(chan []map[string]any, 1)
	go func() { parked <- tn.a.receive(t, "q", map[string]any{"waitSeconds": 20}) }()
	deadline := time.Now().Add(10 * time.Second)
	for w.waiters() <= before {
		if time.Now().After(deadline) {
			t.Fatal("the first long poll never parked")
		}
		time.Sleep(10 * time.Millisecond) // another goroutine's state: no event to await
	}
	// Over the limit (on the other replica): an empty answer while the first is still parked.
	if msgs := tn.b.receive(t, "q", map[string]any{"waitSeconds": 20}); len(msgs) != 0 {
		t.Fatalf("extra long poll got %v", msgs)
	}
	select {
	case m := <-parked:
		t.Fatalf("the parked receive answered early: %v", m)
	default:
	}
	tn.b.send(t, "q", "wake")
	if m := <-parked; len(m) != 1 || m[0]["body"] != "wake" {
		t.Fatalf("parked receive got %v", m)
	}
	// The slot is free again: a long poll parks and is woken by a send.
	again := make(chan []map[string]any, 1)
	before = w.waiters()
	go func() { again <- tn.b.receive(t, "q", map[string]any{"waitSeconds": 20}) }()
	for w.waiters() <= before {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the second long poll never parked")
		}
		time.Sleep(10 * time.Millisecond)
	}
	tn.a.send(t, "q", "again")
	if m := <-again; len(m) != 1 {
		t.Fatalf("second parked receive got %v", m)
	}
}

// TestUsage: the hourly counters reach the store within the flush period and read back on
// both routes; the range is validated.
func TestUsage(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "q", nil)
	tn.a.send(t, "q", "hello", "world!")
	tn.b.send(t, "q", "x")
	msgs := tn.a.receive(t, "q", map[string]any{"maxMessages": 10})
	var bytesOut int64
	for _, m := range msgs {
		bytesOut += int64(len(m["body"].(string)))
		ack(t, tn.a, m["receiptHandle"].(string)).must(t, 204)
	}
	hour := waitUsage(t, tn.a, func(h map[string]any) bool {
		return num(t, h, "messagesAcked") == int64(len(msgs)) && num(t, h, "messagesSent") == 3
	})
	if num(t, hour, "bytesIn") != 12 || num(t, hour, "messagesDelivered") != int64(len(msgs)) || num(t, hour, "bytesOut") != bytesOut || num(t, hour, "requests") < 6 ||
		num(t, hour, "messagesPublished") != 0 {
		t.Fatalf("usage hour: %v", hour)
	}
	if h, _ := hour["hour"].(string); !strings.HasSuffix(h, ":00:00.000Z") {
		t.Fatalf("hour %q is not the start of an hour", h)
	}
	op := tn.op
	path := "/v1/projects/" + tn.project + "/usage"
	from := time.Now().UTC().Add(-2 * time.Hour).Format(time.RFC3339)
	to := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	if u := op.do("GET", path+"?from="+from+"&to="+to, nil).must(t, 200).list("usage"); len(u) != 1 || u[0]["hour"] != hour["hour"] {
		t.Fatalf("operator usage: %v", u)
	}
	old := time.Now().UTC().Add(-72 * time.Hour)
	if u := op.do("GET", path+"?from="+old.Format(time.RFC3339)+"&to="+old.Add(time.Hour).Format(time.RFC3339), nil).must(t, 200).list("usage"); len(u) != 0 {
		t.Fatalf("usage of an hour without use: %v", u)
	}
	op.do("GET", path+"?from=yesterday", nil).fails(t, 400, "invalid_argument", "from")
	op.do("GET", path+"?to=2026-13-01T00:00:00Z", nil).fails(t, 400, "invalid_argument", "to")
	op.do("GET", path+"?from="+to+"&to="+from, nil).fails(t, 400, "invalid_argument", "to")
	op.do("GET", path+"?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:01Z", nil).fails(t, 400, "invalid_argument", "to")
	op.do("GET", path+"?from=2020-01-01T00:00:00Z", nil).fails(t, 400, "invalid_argument", "from")
	op.do("GET", path+"?from=2999-01-01T00:00:00Z", nil).fails(t, 400, "invalid_argument", "from")
	op.do("GET", "/v1/projects/00000000-0000-7000-8000-000000000000/usage", nil).fails(t, 404, "not_found", "")
	tn.a.do("GET", path, nil).fails(t, 403, "permission_denied", "")
	tn.a.do("GET", "/v1/project/usage?from=nope", nil).fails(t, 400, "invalid_argument", "from")
}

// waitUsage polls the tenant's usage until the latest hour satisfies ok, and returns it.
func waitUsage(t testing.TB, c *client, ok func(hour map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		u := c.do("GET", "/v1/project/usage", nil).must(t, 200).list("usage")
		if len(u) > 0 && ok(u[len(u)-1]) {
			return u[len(u)-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage never got there: %v", u)
		}
		time.Sleep(100 * time.Millisecond) // the meters flush on their own period
	}
}
