package metacache

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
)

// gated is a store whose queue reads can be held: while gate is set, a read says so on
// entered and waits for gate to close.
type gated struct {
	counting
	mu      sync.Mutex
	gate    chan struct{}
	entered chan struct{}
}

func (g *gated) GetQueueByID(ctx context.Context, id ids.ID) (meta.Queue, error) {
	g.mu.Lock()
	gate, entered := g.gate, g.entered
	g.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	return g.counting.GetQueueByID(ctx, id)
}

// hold makes the next reads wait for release.
func (g *gated) hold() {
	g.mu.Lock()
	g.gate, g.entered = make(chan struct{}), make(chan struct{}, 1)
	g.mu.Unlock()
}

// release lets the held read go, and the next ones through.
func (g *gated) release() {
	g.mu.Lock()
	close(g.gate)
	g.gate = nil
	g.mu.Unlock()
}

func gatedSetup(t *testing.T) (*gated, *Cache, *clock.Fake, meta.Queue) {
	ctx := context.Background()
	store := &gated{counting: counting{Store: memmeta.New()}}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := New(store, &LocalBus{}, clk, 4*time.Second)
	t.Cleanup(c.Close)
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: clk.Now()}
	q := meta.Queue{ID: ids.New(), ProjectID: p.ID, Name: "q", Type: "standard", CreatedAt: clk.Now(), UpdatedAt: clk.Now(), VisibilityTimeoutSeconds: 30, RetentionSeconds: 60}
	if err := store.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	return store, c, clk, q
}

// changeUnannounced changes the stored queue behind every cache's back (a lost announcement).
func changeUnannounced(t *testing.T, store meta.Store, id ids.ID, vis int) {
	t.Helper()
	q, err := store.GetQueueByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	q.VisibilityTimeoutSeconds = vis
	if _, err := store.UpdateQueue(context.Background(), q); err != nil {
		t.Fatal(err)
	}
}

// TestHotEntryExpires: reading an entry does not extend its life, so a change whose
// announcement was lost is seen within the TTL however often the queue is read.
func TestHotEntryExpires(t *testing.T) {
	ctx := context.Background()
	store, c, clk, q := gatedSetup(t)
	for range 3 {
		if _, err := c.GetQueue(ctx, q.ProjectID, q.ID); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second) // 0, 1, 2 s: before the refresh share
	}
	changeUnannounced(t, store.Store, q.ID, 99)
	clk.Advance(2100 * time.Millisecond) // 4.1 s after the load
	got, err := c.GetQueue(ctx, q.ProjectID, q.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.VisibilityTimeoutSeconds != 99 {
		t.Fatalf("4.1 s after its load, a queue read every second is still the old copy (visibility %d)", got.VisibilityTimeoutSeconds)
	}
}

// TestRefreshAhead: in the last quarter of its TTL a hit is answered from the cache while one
// background read refreshes the entry; the next reads find the new copy without the store.
func TestRefreshAhead(t *testing.T) {
	ctx := context.Background()
	store, c, clk, q := gatedSetup(t)
	if _, err := c.GetQueue(ctx, q.ProjectID, q.ID); err != nil {
		t.Fatal(err)
	}
	changeUnannounced(t, store.Store, q.ID, 77)
	clk.Advance(3200 * time.Millisecond)
	store.hold()
	got, err := c.GetQueue(ctx, q.ProjectID, q.ID) // answered while the store read is held
	if err != nil {
		t.Fatal(err)
	}
	if got.VisibilityTimeoutSeconds != 30 {
		t.Fatalf("the hit answered visibility %d, want the cached 30", got.VisibilityTimeoutSeconds)
	}
	c.mu.Lock()
	refreshing := c.byID[q.ID].refreshing
	c.mu.Unlock()
	if !refreshing {
		t.Fatal("a hit in the last quarter of the TTL started no refresh")
	}
	<-store.entered // the refresh reached the store
	// A second hit meanwhile starts no second refresh.
	if _, err := c.GetQueue(ctx, q.ProjectID, q.ID); err != nil {
		t.Fatal(err)
	}
	store.release()
	c.refreshes.Wait()
	reads := store.reads.Load()
	clk.Advance(2 * time.Second) // 5.2 s after the first load, 2 s after the refresh
	got, err = c.GetQueue(ctx, q.ProjectID, q.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.VisibilityTimeoutSeconds != 77 {
		t.Fatalf("after the refresh: visibility %d, want 77", got.VisibilityTimeoutSeconds)
	}
	if n := store.reads.Load() - reads; n != 0 {
		t.Fatalf("%d store reads after the refresh, want 0", n)
	}
	if n := store.reads.Load(); n != 2 {
		t.Fatalf("%d store reads in all, want 2 (the load and one refresh)", n)
	}
}

// TestInvalidationDuringLoad: a read that an invalidation of the same queue overtakes is not
// cached (it may predate the change); one of another queue does not stop it.
func TestInvalidationDuringLoad(t *testing.T) {
	ctx := context.Background()
	for _, same := range []bool{true, false} {
		store, c, _, q := gatedSetup(t)
		store.hold()
		done := make(chan error, 1)
		go func() { _, err := c.GetQueue(ctx, q.ProjectID, q.ID); done <- err }()
		<-store.entered
		other := q.ID
		if !same {
			other = ids.New()
		}
		c.apply("q " + other.String())
		store.release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetQueue(ctx, q.ProjectID, q.ID); err != nil {
			t.Fatal(err)
		}
		want := int64(1)
		if same {
			want = 2
		}
		if n := store.reads.Load(); n != want {
			t.Fatalf("invalidation of the same queue %v: %d store reads, want %d", same, n, want)
		}
	}
}

// TestGoneBounded: deleted ids are remembered for goneFor, and a long run of deletions keeps
// only about the last goneFor's worth.
func TestGoneBounded(t *testing.T) {
	_, c, clk, _ := gatedSetup(t)
	var last ids.ID
	for range 2000 {
		last = ids.New()
		c.apply("d " + last.String())
		clk.Advance(100 * time.Millisecond)
	}
	if !c.Gone(last) {
		t.Fatal("the last deleted queue is not gone")
	}
	c.mu.Lock()
	n := len(c.gone)
	c.mu.Unlock()
	if n > 2*int(goneFor/(100*time.Millisecond)) {
		t.Fatalf("%d ids remembered, want at most %d", n, 2*int(goneFor/(100*time.Millisecond)))
	}
	clk.Advance(goneFor + time.Millisecond)
	if c.Gone(last) {
		t.Fatal("a queue deleted over goneFor ago is still gone")
	}
}
