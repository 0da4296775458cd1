package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/stack"
	"github.com/queueshq/queues/pkg/testenv"
)

// A replica whose Redis goes away answers 503 unavailable with Retry-After, promptly, and
// readiness says so; it does not hang or answer 500.
func TestRedisUnavailable(t *testing.T) {
	requireStack(t, "a replica on a Redis of its own, stopped mid-test")
	tn := newTenant(t)
	addr, stopRedis, err := testenv.StartRedis(t.Context())
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
	}
}

// With DynamoDB unreachable and nothing cached, requests fail closed with 503 — not 401, not a
// hang past the request timeout.
func TestDynamoUnavailable(t *testing.T) {
	requireStack(t, "a replica on an unreachable DynamoDB")
	tn := newTenant(t)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dead, err := testenv.DynamoClient(t.Context(), "http://127.0.0.1:"+strconv.Itoa(port))
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
	}
}
