package api

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/metacache"
	"github.com/queueshq/queues/pkg/ratelimit"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/tenancy"
)

// scanCounter counts what the engine's move primitive reads: calls, and the body and
// attribute bytes of the messages it hands to Choose.
type scanCounter struct {
	engine.Engine
	mu           sync.Mutex
	calls, bytes int
}

func (c *scanCounter) MoveBatch(ctx context.Context, src engine.Queue, req engine.MoveRequest) (engine.MoveResult, error) {
	choose := req.Choose
	req.Choose = func(m engine.BrowsedMessage) (*engine.Queue, bool) {
		c.mu.Lock()
		c.bytes += int(engine.PayloadBytes(m.Body, m.Attributes))
		c.mu.Unlock()
		return choose(m)
	}
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.Engine.MoveBatch(ctx, src, req)
}

func (c *scanCounter) read() (calls, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls, c.bytes
}

// moveServer is an API handler with move tasks (and no runner) on the embedded engine and
// the memory store; call answers status and body of a request with its bearer.
func moveServer(t *testing.T) (call func(method, path, body string) (int, string), sc *scanCounter, store *memmeta.Store) {
	t.Helper()
	clk := clock.Real{}
	eng, err := embeddedengine.Open(filepath.Join(t.TempDir(), "m.db"), clk, embeddedengine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	ring, err := signingkeys.Generate("k")
	if err != nil {
		t.Fatal(err)
	}
	store = memmeta.New()
	cache := metacache.New(store, &metacache.LocalBus{}, clk, 0)
	t.Cleanup(cache.Close)
	sc = &scanCounter{Engine: eng}
	authority := auth.New(ring, "op", clk.Now)
	h := New(Config{Engine: sc, Meta: cache, Auth: authority, Receipts: receipt.NewSigner(ring), Tenancy: store,
		DefaultLimits: tenancy.Defaults, Limiter: ratelimit.NewLocal(), Rates: DefaultRates, MoveTasks: store}).Handler()
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: time.Now()}
	tok := meta.Token{ID: ids.New(), ProjectID: p.ID, Scopes: []string{"*"}, CreatedAt: time.Now()}
	if err := errors.Join(store.CreateProject(t.Context(), p), store.CreateToken(t.Context(), tok)); err != nil {
		t.Fatal(err)
	}
	jwt, err := authority.Issue(p.ID, tok.ID, tok.Scopes, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	call = func(method, path, body string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+jwt)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	return call, sc, store
}

// TestMoveTaskStartCost: starting a move task (a dry run too) reads at most one batch of the
// source in the request (one engine call, at most engine.MaxMoveBatchBytes), however much it
// holds; a larger queue's task is stored counting, for the runner. A queue within one batch is
// counted whole: its task knows toMove at once, and its dry run answers 200 with the counts.
func TestMoveTaskStartCost(t *testing.T) {
	call, sc, store := moveServer(t)
	for _, q := range []string{`{"name":"q"}`, `{"name":"dst"}`, `{"name":"small"}`} {
		if code, body := call("POST", "/v1/queues", q); code != 201 {
			t.Fatalf("create queue: %d %s", code, body)
		}
	}
	big := strings.Repeat("x", 250_000)
	send := func(q, body string, n int) {
		for range n {
			if code, out := call("POST", "/v1/queues/"+q+"/messages", `{"messages":[{"body":"`+body+`"}]}`); code != 200 {
				t.Fatalf("send: %d %s", code, out)
			}
		}
	}
	send("q", big, 40) // 10 MB
	send("small", "hi", 3)
	for _, req := range []string{`{"destination":"dst"}`, `{"dryRun":true}`} {
		before, _ := sc.read()
		_, read0 := sc.read()
		code, body := call("POST", "/v1/queues/q/move-tasks", req)
		if code != 201 {
			t.Fatalf("start %s: %d %s", req, code, body)
		}
		calls, bytes := sc.read()
		calls, bytes = calls-before, bytes-read0
		t.Logf("start %s: %d engine scans, %d message bytes read in the request; answer %d bytes", req, calls, bytes, len(body))
		if calls != 1 || bytes > engine.MaxMoveBatchBytes {
			t.Fatalf("the start request read %d batches, %d bytes; want one batch of at most %d", calls, bytes, engine.MaxMoveBatchBytes)
		}
		if !strings.Contains(body, `"status":"running"`) || strings.Contains(body, `"toMove":40`) {
			t.Fatalf("started: %s", body)
		}
		// The first ends (cancelled) so the queue is free for the dry run.
		ts, _ := store.RunningMoveTasks(t.Context())
		for _, tk := range ts {
			if !tk.Counting || tk.Cursor == "" {
				t.Fatalf("stored task %+v is not counting on from the request's batch", tk)
			}
			tk.Status = meta.MoveCancelled
			if _, err := store.UpdateMoveTask(t.Context(), tk); err != nil {
				t.Fatal(err)
			}
		}
	}
	if code, body := call("POST", "/v1/queues/small/move-tasks", `{"destination":"dst","dryRun":true}`); code != 200 ||
		!strings.Contains(body, `"toMove":3`) || !strings.Contains(body, `"status":"completed"`) {
		t.Fatalf("dry run of a small queue: %d %s", code, body)
	}
	if code, body := call("POST", "/v1/queues/small/move-tasks", `{"destination":"dst"}`); code != 201 ||
		!strings.Contains(body, `"toMove":3`) || !strings.Contains(body, `"status":"running"`) {
		t.Fatalf("move of a small queue: %d %s", code, body)
	}
}
