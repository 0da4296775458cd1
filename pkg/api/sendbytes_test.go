package api

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
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

// sendBytesPerSecond: a send whose Content-Length passes the project's byte budget is
// refused 429 with Retry-After and Connection: close before its body reaches the engine; a
// receive is not charged.
func TestSendBytesPerSecond(t *testing.T) {
	defaults := tenancy.Defaults
	defaults.SendBytesPerSecond = 4096
	h, jwt, ce := tenancyServer(t, defaults)
	srv := httptest.NewServer(h)
	defer srv.Close()
	call := func(path, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+jwt)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := call("/v1/queues", `{"name":"q"}`); r.StatusCode != 201 {
		t.Fatalf("create queue: %d", r.StatusCode)
	}
	big := `{"messages":[{"body":"` + strings.Repeat("x", 3000) + `"}]}`
	if r := call("/v1/queues/q/messages", big); r.StatusCode != 200 {
		t.Fatalf("first send: %d", r.StatusCode)
	}
	r := call("/v1/queues/q/messages", big)
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || !r.Close {
		t.Fatalf("second send: %d Retry-After %q close %v; want 429 with Retry-After, connection closed", r.StatusCode, r.Header.Get("Retry-After"), r.Close)
	}
	ce.mu.Lock()
	sends := ce.sends
	ce.mu.Unlock()
	if sends != 1 {
		t.Fatalf("the refused send reached the engine (%d sends)", sends)
	}
	if r := call("/v1/queues/q/receive", `{"maxMessages":1,"waitSeconds":0}`); r.StatusCode != 200 {
		t.Fatalf("receive beside a spent byte budget: %d", r.StatusCode)
	}
}

// tenancyServer is an API handler on the embedded engine and the memory store with the
// project limits given, a project and a token (its bearer); the engine's sends are counted.
func tenancyServer(t *testing.T, defaults tenancy.Limits) (http.Handler, string, *capture) {
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
	store := memmeta.New()
	cache := metacache.New(store, &metacache.LocalBus{}, clk, 0)
	t.Cleanup(cache.Close)
	ce := &capture{Engine: eng}
	authority := auth.New(ring, "op", clk.Now)
	h := New(Config{Engine: ce, Meta: cache, Auth: authority, Receipts: receipt.NewSigner(ring),
		Tenancy: store, DefaultLimits: defaults, Limiter: ratelimit.NewLocal(), Rates: DefaultRates}).Handler()
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: time.Now()}
	tok := meta.Token{ID: ids.New(), ProjectID: p.ID, Scopes: []string{"*"}, CreatedAt: time.Now()}
	if err := errors.Join(store.CreateProject(t.Context(), p), store.CreateToken(t.Context(), tok)); err != nil {
		t.Fatal(err)
	}
	jwt, err := authority.Issue(p.ID, tok.ID, tok.Scopes, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return h, jwt, ce
}

// readCounter is a request body that counts the bytes read from it.
type readCounter struct {
	r io.Reader
	n int
}

func (c *readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// A send to a project at its maxStoredBytes, once the replica has seen a send of it refused
// for it, is refused 403 quota_exceeded before a byte of its body is read; a send that still
// fits is read and stored.
func TestFullProjectSendUnread(t *testing.T) {
	defaults := tenancy.Defaults
	defaults.MaxStoredBytes = 100
	h, jwt, ce := tenancyServer(t, defaults)
	call := func(path, body string) (int, int) {
		t.Helper()
		rc := &readCounter{r: strings.NewReader(body)}
		req := httptest.NewRequest("POST", path, rc)
		req.ContentLength = int64(len(body))
		req.Header.Set("Authorization", "Bearer "+jwt)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rc.n
	}
	msg := func(n int) string { return `{"messages":[{"body":"` + strings.Repeat("x", n) + `"}]}` }
	if code, _ := call("/v1/queues", `{"name":"q"}`); code != 201 {
		t.Fatalf("create queue: %d", code)
	}
	if code, _ := call("/v1/queues/q/messages", msg(60)); code != 200 {
		t.Fatalf("first send: %d", code)
	}
	if code, read := call("/v1/queues/q/messages", msg(60)); code != 403 || read == 0 {
		t.Fatalf("send past the limit: %d, %d bytes read; want the engine's 403 after a read", code, read)
	}
	if code, _ := call("/v1/queues/q/messages", msg(40)); code != 200 {
		t.Fatalf("send that fits: %d", code)
	}
	// The send that fit dropped the mark (the project was below its limit): the first send
	// at the limit is the engine's refusal, read whole; it marks the project again.
	if code, read := call("/v1/queues/q/messages", msg(1)); code != 403 || read == 0 {
		t.Fatalf("first send at the limit: %d, %d bytes read; want the engine's 403 after a read", code, read)
	}
	for range 2 { // marked and at the limit: refused unread, every time
		if code, read := call("/v1/queues/q/messages", msg(1)); code != 403 || read != 0 {
			t.Fatalf("send to a full project: %d, %d bytes of its body read; want 403 unread", code, read)
		}
	}
	ce.mu.Lock()
	defer ce.mu.Unlock()
	if ce.sends != 4 { // the two stored, the two the engine refused
		t.Fatalf("%d sends reached the engine, want 4", ce.sends)
	}
}
