package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/services/queues/stack"
)

// A replica whose Redis goes away answers 503 unavailable with Retry-After, promptly, and
// readiness says so; it does not hang or answer 500.
func TestRedisUnavailable(t *testing.T) {
	requireStack(t, "a replica on a Redis of its own, stopped mid-test")
	tn := newTenant(t)
	addr, stopRedis, err := testservers.StartRedis(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer stopRedis()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 1, DialTimeout: time.Second})
	defer rdb.Close()
	srv, closeReplica, err := w.replica(context.Background(), stack.Options{Redis: rdb})
	if err != nil {
		t.Fatal(err)
	}
	defer closeReplica()
	c := newClient(t, srv, tn.token)
	c.do("POST", "/v1/queues", map[string]any{"name": "down"}).must(t, 201)
	c.send(t, "down", "before")
	stopRedis()
	for _, r := range []resp{
		c.do("POST", "/v1/queues/down/messages", map[string]any{"messages": []any{map[string]any{"body": "x"}}}),
		c.do("POST", "/v1/queues/down/receive", map[string]any{"waitSeconds": 5}),
		c.do("GET", "/v1/queues/down", nil),
		c.do("GET", "/readyz", nil),
	} {
		r.fails(t, 503, "unavailable", "")
		if r.header.Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After: %s", r.raw)
		}
		noInternals(t, r, "redis")
	}
}

// noInternals checks that an unavailable answer names no address or error text (only, for
// /readyz, the failing dependency) and carries the request id its cause was logged with.
func noInternals(t *testing.T, r resp, dependency string) {
	t.Helper()
	raw := string(r.raw)
	for _, leak := range []string{"127.0.0.1", "dial tcp", "connection refused", "redis:", "i/o timeout", "dynamodb", "operation error"} {
		if strings.Contains(strings.ToLower(raw), leak) {
			t.Errorf("answer leaks %q: %s", leak, raw)
		}
	}
	e, _ := r.body["error"].(map[string]any)
	details, _ := e["details"].(map[string]any)
	if id, _ := details["requestId"].(string); id == "" || id != r.header.Get("X-Request-Id") {
		t.Errorf("answer lacks details.requestId matching X-Request-Id %q: %s", r.header.Get("X-Request-Id"), raw)
	}
	if deps, ok := details["dependencies"]; ok && fmt.Sprint(deps) != "["+dependency+"]" {
		t.Errorf("readiness names %v; want [%s]", deps, dependency)
	}
}

// With DynamoDB unreachable and nothing cached, requests fail closed with 503 — not 401, not a
// hang past the request timeout.
func TestDynamoUnavailable(t *testing.T) {
	requireStack(t, "a replica on an unreachable DynamoDB")
	tn := newTenant(t)
	port, err := testservers.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dead, err := testservers.DynamoClient(t.Context(), "http://127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	srv, closeReplica, err := w.replica(context.Background(), stack.Options{Dynamo: dead, SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer closeReplica()
	c := newClient(t, srv, tn.token)
	for _, res := range []resp{
		c.do("GET", "/v1/queues", nil),
		c.as(operator).do("POST", "/v1/projects", map[string]any{"name": "x"}),
		c.do("GET", "/readyz", nil),
	} {
		res.fails(t, 503, "unavailable", "")
		noInternals(t, res, "metadata")
	}
}
