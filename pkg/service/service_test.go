package service

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/tenancy"
)

// TestMain fails the package when a test leaves a goroutine running (an arbiter or a long
// poll outliving its test).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memMeta is the in-memory metadata store with the Gone the service asks of its metadata (no
// queue is ever recently deleted here).
type memMeta struct{ *memmeta.Store }

func (memMeta) Gone(ids.ID) bool { return false }

// fakeLimiter answers every rate limit from a table: the wait it gives each key (0 admits),
// and records the keys asked in order, so a test sees which limits a call passed.
type fakeLimiter struct {
	mu    sync.Mutex
	waits map[string]time.Duration
	asked []string
}

func newLimiter() *fakeLimiter { return &fakeLimiter{waits: map[string]time.Duration{}} }

func (l *fakeLimiter) Allow(_ context.Context, key string, _ int) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, key)
	return l.waits[key], nil
}

func (l *fakeLimiter) AllowN(ctx context.Context, key string, perSecond, _ int) (time.Duration, error) {
	return l.Allow(ctx, key, perSecond)
}

func (l *fakeLimiter) refuse(key string, wait time.Duration) {
	l.mu.Lock()
	l.waits[key] = wait
	l.mu.Unlock()
}

func (l *fakeLimiter) keys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.asked...)
}

// storedBytesEngine is an engine that knows only each project's stored bytes (the full
// project's check); anything else panics (the embedded nil interface).
type storedBytesEngine struct {
	engine.Engine
	stored int64
}

func (e *storedBytesEngine) StoredBytes(context.Context, ids.ID) (int64, error) { return e.stored, nil }

// fixture is a service over the in-memory metadata store, a fake limiter, a fake clock and a
// meter, with one project and its standard queue.
type fixture struct {
	svc     *Service
	store   *memmeta.Store
	lim     *fakeLimiter
	clk     *clock.Fake
	meter   *tenancy.Meter
	hour    time.Time
	project ids.ID
	q       meta.Queue
}

var start = time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)

// newFixture wires the service to the embedded engine on a temp dir (embedded) or to an
// engine that knows only stored bytes (admission alone). With the embedded engine the
// project's queue is created in both the engine and the store.
func newFixture(t *testing.T, embedded bool, cfg Config) *fixture {
	t.Helper()
	f := &fixture{store: memmeta.New(), lim: newLimiter(), clk: clock.NewFake(start.Add(time.Minute)), hour: start, project: ids.New()}
	if err := f.store.CreateProject(t.Context(), meta.Project{ID: f.project, Name: "p", CreatedAt: start}); err != nil {
		t.Fatal(err)
	}
	f.meter = tenancy.NewMeter(f.clk, "r")
	var eng engine.Engine = &storedBytesEngine{}
	if embedded {
		eng = openEngine(t, f.clk)
	}
	cfg.Engine, cfg.Meta, cfg.Tenancy, cfg.Limiter, cfg.Clock, cfg.Meter = eng, memMeta{f.store}, f.store, f.lim, f.clk, f.meter
	f.svc = New(cfg)
	f.q = f.svc.NewQueue(f.project, "q", string(engine.Standard))
	if !embedded {
		return f
	}
	if err := f.svc.CreateQueue(t.Context(), f.q); err != nil {
		t.Fatal(err)
	}
	return f
}

// setLimits gives the project limits of its own and lets the cached ones expire.
func (f *fixture) setLimits(t *testing.T, patch map[string]int64) {
	t.Helper()
	p := meta.LimitsPatch{}
	for k, v := range patch {
		p[k] = &v
	}
	if _, err := f.store.UpdateLimits(t.Context(), f.project, p); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(limitsTTL + time.Second)
}

// usage flushes the meter and reads the project's counters of the hour.
func (f *fixture) usage(t *testing.T) meta.Counters {
	t.Helper()
	if err := f.meter.Flush(t.Context(), f.store); err != nil {
		t.Fatal(err)
	}
	u, err := f.store.Usage(t.Context(), f.project, f.hour, f.hour.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(u) == 0 {
		return meta.Counters{}
	}
	return u[0].Counters
}

// openEngine opens the embedded engine on a temp dir, closed when the test ends.
func openEngine(t *testing.T, clk clock.Clock) *embeddedengine.Engine {
	t.Helper()
	e, err := embeddedengine.Open(t.TempDir()+"/engine.db", clk, embeddedengine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// await waits for cond without sleeping on a guess: it yields until cond holds, failing the
// test after a bound no passing run comes near.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}
