package attacks

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/services/queues/stack"
)

// leaks are strings no answer may carry: addresses, driver and Redis error text, script names.
var leaks = []string{"127.0.0.1", "dial tcp", "connection refused", "misconf", "oom command", "maxmemory",
	"script:", "user_script", "redis:", "err ", "dynamodb", "operation error", "goroutine", ".go:"}

func noLeak(t *testing.T, what string, a answer) {
	t.Helper()
	low := strings.ToLower(string(a.raw))
	for _, l := range leaks {
		if strings.Contains(low, l) {
			t.Errorf("%s: the answer leaks %q: %s", what, l, a.raw)
		}
	}
	er, _ := a.body["error"].(map[string]any)
	d, _ := er["details"].(map[string]any)
	if id, _ := d["requestId"].(string); id == "" || id != a.header.Get("X-Request-Id") {
		t.Errorf("%s: details.requestId %q does not match X-Request-Id %q", what, id, a.header.Get("X-Request-Id"))
	}
	if !strings.Contains(e.logs.String(), a.header.Get("X-Request-Id")) {
		t.Errorf("%s: the cause is not logged under request id %s", what, a.header.Get("X-Request-Id"))
	}
}

// X43, and the storage failures the issue found answered 500 with Redis's text: Redis refusing
// writes because it cannot persist (MISCONF, a full disk or a failed snapshot) or is out of
// memory (OOM) is 503 unavailable with Retry-After and a fixed message; the cause is logged
// under the request id the answer carries. /readyz names a dead dependency, never its address.
func TestStorageRefusals(t *testing.T) {
	// A Redis of its own, whose dir may be changed (a protected config) and with a save point
	// (MISCONF needs one).
	addr, stopRedis, err := testservers.StartRedis(t.Context(), "--enable-protected-configs", "yes", "--save", "3600 1")
	if err != nil {
		t.Fatal(err)
	}
	defer stopRedis()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 1, DialTimeout: time.Second})
	defer rdb.Close()
	base, _, stop, err := e.serve(stack.Options{Redis: rdb})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, tok := project(t)
	callTo(t, base, "POST", "/v1/queues", tok, map[string]any{"name": "full"}, nil).is(t, 201, "", "")
	send := func() answer {
		return callTo(t, base, "POST", "/v1/queues/full/messages", tok, map[string]any{"messages": []any{map[string]any{"body": "x"}}}, nil)
	}
	send().is(t, 200, "", "")

	// MISCONF: the snapshot fails (the directory cannot hold files).
	ctx := t.Context()
	if err := rdb.ConfigSet(ctx, "dir", "/proc").Err(); err != nil {
		t.Fatal(err)
	}
	_ = rdb.BgSave(ctx).Err()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(rdb.Info(ctx, "persistence").Val(), "rdb_last_bgsave_status:err") {
		if time.Now().After(deadline) {
			t.Fatal("the snapshot did not fail")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a := send()
	a.is(t, 503, "unavailable", "")
	if a.header.Get("Retry-After") == "" {
		t.Error("MISCONF: 503 without Retry-After")
	}
	noLeak(t, "MISCONF", a)

	// OOM: Redis over maxmemory with noeviction.
	if err := rdb.ConfigSet(ctx, "dir", t.TempDir()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(rdb.Info(ctx, "persistence").Val(), "rdb_last_bgsave_status:ok") {
		time.Sleep(20 * time.Millisecond)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	a = send()
	a.is(t, 503, "unavailable", "")
	if a.header.Get("Retry-After") == "" {
		t.Error("OOM: 503 without Retry-After")
	}
	noLeak(t, "OOM", a)
	_ = rdb.ConfigSet(ctx, "maxmemory", "0").Err()

	// Redis gone: sends and readiness answer 503; readiness names "redis" only.
	stopRedis()
	a = send()
	a.is(t, 503, "unavailable", "")
	noLeak(t, "Redis stopped", a)
	r := callTo(t, base, "GET", "/readyz", "", nil, nil)
	r.is(t, 503, "unavailable", "")
	noLeak(t, "readyz", r)
	er, _ := r.body["error"].(map[string]any)
	d, _ := er["details"].(map[string]any)
	if deps, _ := d["dependencies"].([]any); len(deps) != 1 || deps[0] != "redis" {
		t.Errorf("readyz names %v; want [redis]: %s", d["dependencies"], r.raw)
	}
}
