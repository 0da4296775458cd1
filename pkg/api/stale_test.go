package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/metacache"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/tenancy"
)

// countingLimiter admits every call and counts them per key.
type countingLimiter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countingLimiter) Allow(_ context.Context, key string, _ int) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[key]++
	return 0, nil
}

// requestsOf sums the metered requests of flushes.
type requestsOf struct{ n int64 }

func (r *requestsOf) AddUsage(_ context.Context, f meta.UsageFlush) error {
	for _, h := range f.Hours {
		r.n += h.Requests
	}
	return nil
}

// Issue 31: a stale handle presented again and again (no credential needed) meters none of
// the owning project's requests and spends its request rate once, at the first storage check;
// before, each presentation spent both.
func TestStaleHandleChargesNoProject(t *testing.T) {
	clk := clock.Real{}
	eng, err := embeddedengine.Open(filepath.Join(t.TempDir(), "s.db"), clk, embeddedengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ring, err := signingkeys.Generate("k")
	if err != nil {
		t.Fatal(err)
	}
	store := memmeta.New()
	cache := metacache.New(store, &metacache.LocalBus{}, clk, 0)
	defer cache.Close()
	authority := auth.New(ring, "op", clk.Now)
	lim := &countingLimiter{n: map[string]int{}}
	meter := tenancy.NewMeter(clk, "")
	srv := httptest.NewServer(New(Config{Engine: eng, Meta: cache, Auth: authority, Receipts: receipt.NewSigner(ring),
		Tenancy: store, Limiter: lim, Meter: meter}).Handler())
	defer srv.Close()
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: time.Now()}
	tok := meta.Token{ID: ids.New(), ProjectID: p.ID, Scopes: []string{"*"}, CreatedAt: time.Now()}
	if err := errors.Join(store.CreateProject(t.Context(), p), store.CreateToken(t.Context(), tok)); err != nil {
		t.Fatal(err)
	}
	jwt, err := authority.Issue(p.ID, tok.ID, tok.Scopes, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(path, token, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for _, c := range []struct{ path, body string }{{"/v1/queues", `{"name":"q"}`}, {"/v1/queues/q/messages", `{"messages":[{"body":"x"}]}`}} {
		if st, b := call(c.path, jwt, c.body); st/100 != 2 {
			t.Fatalf("%s: %d %s", c.path, st, b)
		}
	}
	_, b := call("/v1/queues/q/receive", jwt, `{"waitSeconds":0}`)
	var got struct {
		Messages []struct{ ReceiptHandle string }
	}
	if err := json.Unmarshal(b, &got); err != nil || len(got.Messages) != 1 {
		t.Fatalf("receive: %s", b)
	}
	ack := `{"receiptHandle":"` + got.Messages[0].ReceiptHandle + `"}`
	if st, b := call("/v1/receipts/ack", "", ack); st != 204 {
		t.Fatalf("ack: %d %s", st, b)
	}
	usage := &requestsOf{}
	if err := meter.Flush(t.Context(), usage); err != nil {
		t.Fatal(err)
	}
	lim.mu.Lock()
	before := lim.n[tenancy.RateKey(p.ID)]
	lim.mu.Unlock()
	usage.n = 0
	const storm = 50
	for range storm {
		if st, b := call("/v1/receipts/ack", "", ack); st != 410 {
			t.Fatalf("stale ack: %d %s", st, b)
		}
	}
	if err := meter.Flush(t.Context(), usage); err != nil {
		t.Fatal(err)
	}
	lim.mu.Lock()
	spent := lim.n[tenancy.RateKey(p.ID)] - before
	lim.mu.Unlock()
	t.Logf("%d stale acks: project requests metered %d, project rate tokens taken %d", storm, usage.n, spent)
	if usage.n != 0 || spent > 1 {
		t.Fatalf("%d stale acks metered %d project requests and took %d of its rate; want 0 and at most 1", storm, usage.n, spent)
	}
}
