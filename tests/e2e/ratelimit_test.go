package e2e

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/services/queues/embedded"
	"github.com/queueshq/queues/services/queues/stack"
)

// Per-queue rate limits are shared by replicas through Redis (embedded: kept by the one node)
// and answer 429 rate_limited with Retry-After; another queue keeps its own budget.
func TestRateLimits(t *testing.T) {
	rates := api.Rates{StandardSend: 3, StandardReceive: 3, FIFOSend: 3, FIFOReceive: 3}
	var srvA, srvB *httptest.Server
	if w.backend == backendEmbedded {
		srv, closeNode, err := openNode(embedded.Options{Rates: rates})
		if err != nil {
			t.Fatal(err)
		}
		defer closeNode()
		srvA, srvB = srv, srv
	} else {
		var closeA, closeB func()
		var err error
		if srvA, closeA, err = w.replica(context.Background(), stack.Options{Rates: rates}); err != nil {
			t.Fatal(err)
		}
		defer closeA()
		if srvB, closeB, err = w.replica(context.Background(), stack.Options{Rates: rates}); err != nil {
			t.Fatal(err)
		}
		defer closeB()
	}
	tn := newTenantOn(t, srvA, srvB)
	tn.queue(t, "limited", nil)
	tn.queue(t, "other", nil)
	a, b := newClient(t, srvA, tn.token), newClient(t, srvB, tn.token)
	send := map[string]any{"messages": []any{map[string]any{"body": "x"}}}
	var limited resp
	for i := range 10 { // a budget of 3 a second cannot admit 10 requests in a row
		c := a
		if i%2 == 1 {
			c = b
		}
		if r := c.do("POST", "/v1/queues/limited/messages", send); r.status == 429 {
			limited = r
			break
		}
	}
	if limited.status != 429 {
		t.Fatal("10 sends in a row never hit a limit of 3 a second shared by replicas A and B")
	}
	limited.fails(t, 429, "rate_limited", "")
	if limited.header.Get("Retry-After") == "" {
		t.Fatal("rate_limited without Retry-After")
	}
	a.do("POST", "/v1/queues/other/messages", send).must(t, 200)
}
