package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
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
	"github.com/queueshq/queues/pkg/service"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/tenancy"
)

func TestParseLimitsPatch(t *testing.T) {
	p, err := parseLimitsPatch([]byte(`{"limits":{"maxQueues":5,"requestsPerSecond":null}}`))
	if err != nil || len(p) != 2 || *p["maxQueues"] != 5 || p["requestsPerSecond"] != nil {
		t.Fatalf("patch %v, %v", p, err)
	}
	for body, field := range map[string]string{
		`{}`:                                   "limits",
		`{"limits":null}`:                      "limits",
		`{"limits":[]}`:                        "limits",
		`{"limits":{"maxQueues":1.5}}`:         "limits.maxQueues",
		`{"limits":{"maxStoredBytes":0}}`:      "limits.maxStoredBytes",
		`{"limits":{"maxWaitingReceives":-1}}`: "limits.maxWaitingReceives",
		`{"limits":{"nope":1}}`:                "limits.nope",
		`{"limits":{},"x":1}`:                  "x",
	} {
		if _, err := parseLimitsPatch([]byte(body)); err == nil || err.Field != field {
			t.Errorf("%s: %v, want field %q", body, err, field)
		}
	}
}

func FuzzLimitsPatch(f *testing.F) {
	for _, s := range []string{`{"limits":{"maxQueues":5}}`, `{"limits":{"maxQueues":null,"maxStoredBytes":1e3}}`, `{"limits":{}}`, `{`, `{"limits":{"x":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseLimitsPatch(data)
		if err != nil {
			// A field outside "limits" is named only for an object body (an unknown top-level
			// field); JSON allows whitespace before it (the 10-minute run's finding, kept in
			// testdata/fuzz: ` {"0":0}`).
			object := strings.HasPrefix(strings.TrimLeft(string(data), " \t\r\n"), "{")
			if err.Code != apierr.InvalidArgument || (err.Field != "" && !strings.HasPrefix(err.Field, "limits") && !object) {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		for name, v := range p {
			if v == nil {
				continue
			}
			if why := tenancy.CheckValue(name, *v); why != "" {
				t.Fatalf("accepted %s = %d: %s", name, *v, why)
			}
		}
	})
}

// capture is an engine that remembers the engine.Queue of the last send.
type capture struct {
	engine.Engine
	mu    sync.Mutex
	last  engine.Queue
	sends int
}

func (c *capture) Send(ctx context.Context, q engine.Queue, msgs []engine.Message) ([]engine.SendResult, error) {
	c.mu.Lock()
	c.last = q
	c.sends++
	c.mu.Unlock()
	return c.Engine.Send(ctx, q, msgs)
}

// TestSendCarriesMaxStoredBytes: a send's engine.Queue carries the project's effective
// maxStoredBytes — the operator's default, then the project's own value once set.
func TestSendCarriesMaxStoredBytes(t *testing.T) {
	clk := clock.Real{}
	eng, err := embeddedengine.Open(filepath.Join(t.TempDir(), "m.db"), clk, embeddedengine.Options{})
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
	ce := &capture{Engine: eng}
	authority := auth.New(ring, "op", clk.Now)
	defaults := tenancy.Defaults
	defaults.MaxStoredBytes = 5000
	srv := httptest.NewServer(New(Config{Engine: ce, Meta: cache, Auth: authority, Receipts: receipt.NewSigner(ring),
		Tenancy: store, DefaultLimits: defaults}).Handler())
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
	call := func(method, path, token, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	sent := func() int64 {
		t.Helper()
		if st := call("POST", "/v1/queues/q/messages", jwt, `{"messages":[{"body":"x"}]}`); st != 200 {
			t.Fatalf("send: %d", st)
		}
		ce.mu.Lock()
		defer ce.mu.Unlock()
		if ce.last.Project != p.ID {
			t.Fatalf("the send's queue has project %v, want %v", ce.last.Project, p.ID)
		}
		return ce.last.MaxStoredBytes
	}
	if st := call("POST", "/v1/queues", jwt, `{"name":"q"}`); st != 201 {
		t.Fatalf("create queue: %d", st)
	}
	if got := sent(); got != 5000 {
		t.Fatalf("MaxStoredBytes = %d, want the default 5000", got)
	}
	if st := call("PATCH", "/v1/projects/"+p.ID.String(), "op", `{"limits":{"maxStoredBytes":777}}`); st != 200 {
		t.Fatalf("patch: %d", st)
	}
	if got := sent(); got != 777 {
		t.Fatalf("MaxStoredBytes = %d, want the project's 777", got)
	}
}

// BenchmarkAdmit is what tenancy adds to every call with a project token: the limits lookup,
// the project's rate limiter and the meter.
func BenchmarkAdmit(b *testing.B) {
	store := memmeta.New()
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: time.Now()}
	if err := store.CreateProject(context.Background(), p); err != nil {
		b.Fatal(err)
	}
	s := New(Config{Tenancy: store, Limiter: ratelimit.NewLocal(), Meter: tenancy.NewMeter(clock.Real{}, "")})
	s.cfg.DefaultLimits.RequestsPerSecond = 10_000_000
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.admit(ctx, p.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type brokenLimiter struct{}

func (brokenLimiter) Allow(context.Context, string, int) (time.Duration, error) {
	return 0, apierr.New(apierr.Unavailable, "OOM command not allowed when used memory > 'maxmemory'")
}

type refusingLimiter struct{}

func (refusingLimiter) Allow(context.Context, string, int) (time.Duration, error) {
	return 1500 * time.Millisecond, nil
}

// TestAdmit: over the project's rate a call is rate_limited with the limiter's Retry-After;
// a limiter that cannot be reached admits (a full Redis must not stop the calls that drain it).
func TestAdmit(t *testing.T) {
	store := memmeta.New()
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: time.Now()}
	if err := store.CreateProject(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Tenancy: store, Limiter: refusingLimiter{}})
	err := s.admit(t.Context(), p.ID)
	if e := apierr.As(err); e.Code != apierr.RateLimited || e.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("over the rate: %v", err)
	}
	s = New(Config{Tenancy: store, Limiter: brokenLimiter{}})
	if err := s.admit(t.Context(), p.ID); err != nil {
		t.Fatalf("a broken limiter refused: %v", err)
	}
}

// downTenancy is a TenancyStore whose GetLimits fails while down (a metadata outage).
type downTenancy struct {
	meta.TenancyStore
	down bool
}

func (d *downTenancy) GetLimits(ctx context.Context, project ids.ID) (meta.Limits, error) {
	if d.down {
		return nil, apierr.New(apierr.Unavailable, "metadata store unreachable")
	}
	return d.TenancyStore.GetLimits(ctx, project)
}

// recordingLimiter admits every call and records the rate it was asked to apply.
type recordingLimiter struct{ rate int }

func (r *recordingLimiter) Allow(_ context.Context, _ string, perSecond int) (time.Duration, error) {
	r.rate = perSecond
	return 0, nil
}

// Issue 31: through a metadata outage a throttled project keeps its last known limits — however
// old, and however many other projects passed through the cache — never the higher defaults;
// a project never seen is refused 503 with Retry-After until the store answers.
func TestLimitsThroughMetadataOutage(t *testing.T) {
	ctx := t.Context()
	store := memmeta.New()
	throttled := meta.Project{ID: ids.New(), Name: "throttled", CreatedAt: time.Now()}
	unseen := meta.Project{ID: ids.New(), Name: "unseen", CreatedAt: time.Now()}
	for _, p := range []meta.Project{throttled, unseen} {
		if err := store.CreateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	five := int64(5)
	if _, err := store.UpdateLimits(ctx, throttled.ID, meta.LimitsPatch{meta.LimitRequestsPerSecond: &five}); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ten := &downTenancy{TenancyStore: store}
	lim := &recordingLimiter{}
	s := New(Config{Tenancy: ten, Limiter: lim, Clock: clk})
	if err := s.admit(ctx, throttled.ID); err != nil || lim.rate != 5 {
		t.Fatalf("before the outage: %v, rate %d", err, lim.rate)
	}
	// Other projects fill the cache past its bound while the store is up.
	for range service.MaxCachedLimits {
		s.rememberLimits(ids.New(), nil)
	}
	ten.down = true
	clk.Advance(time.Hour)
	if err := s.admit(ctx, throttled.ID); err != nil || lim.rate != 5 {
		t.Fatalf("an hour into the outage: %v, rate %d; want the last known 5, not the default %d", err, lim.rate, tenancy.Defaults.RequestsPerSecond)
	}
	err := s.admit(ctx, unseen.ID)
	if e := apierr.As(err); e == nil || e.Code != apierr.Unavailable || e.RetryAfter <= 0 {
		t.Fatalf("a project never seen, in the outage: %v; want 503 with Retry-After", err)
	}
	ten.down = false
	if err := s.admit(ctx, unseen.ID); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
}
