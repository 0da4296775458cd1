package metacache

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
)

// counting counts the reads that reach the store.
type counting struct {
	meta.Store
	reads atomic.Int64
}

func (c *counting) GetQueueByID(ctx context.Context, id ids.ID) (meta.Queue, error) {
	c.reads.Add(1)
	return c.Store.GetQueueByID(ctx, id)
}

func (c *counting) GetQueueByName(ctx context.Context, p ids.ID, n string) (meta.Queue, error) {
	c.reads.Add(1)
	return c.Store.GetQueueByName(ctx, p, n)
}

func (c *counting) GetToken(ctx context.Context, p, t ids.ID) (meta.Token, error) {
	c.reads.Add(1)
	return c.Store.GetToken(ctx, p, t)
}

func setup(t *testing.T) (*counting, *Cache, *Cache, *clock.Fake, meta.Queue) {
	ctx := context.Background()
	store := &counting{Store: memmeta.New()}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	bus := &LocalBus{}
	a, b := New(store, bus, clk, time.Second), New(store, bus, clk, time.Second)
	t.Cleanup(func() { a.Close(); b.Close() })
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: clk.Now()}
	if err := store.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	q := meta.Queue{ID: ids.New(), ProjectID: p.ID, Name: "q", Type: "standard", CreatedAt: clk.Now(), UpdatedAt: clk.Now(), VisibilityTimeoutSeconds: 30, RetentionSeconds: 60}
	if err := a.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	return store, a, b, clk, q
}

func TestCachesWithinTTL(t *testing.T) {
	ctx := context.Background()
	store, _, b, clk, q := setup(t)
	for range 3 {
		if _, err := b.GetQueueByName(ctx, q.ProjectID, "q"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.GetQueue(ctx, q.ProjectID, q.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.reads.Load(); n != 1 {
		t.Fatalf("%d store reads within the TTL, want 1", n)
	}
	clk.Advance(time.Second)
	if _, err := b.GetQueue(ctx, q.ProjectID, q.ID); err != nil {
		t.Fatal(err)
	}
	if n := store.reads.Load(); n != 2 {
		t.Fatalf("%d store reads after the TTL, want 2", n)
	}
	if _, err := b.GetQueue(ctx, ids.New(), q.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("another project's view of the queue: %v", err)
	}
}

func TestWritesInvalidateEveryReplica(t *testing.T) {
	ctx := context.Background()
	_, a, b, _, q := setup(t)
	if _, err := b.GetQueue(ctx, q.ProjectID, q.ID); err != nil {
		t.Fatal(err)
	}
	cur, _ := a.GetQueue(ctx, q.ProjectID, q.ID)
	cur.VisibilityTimeoutSeconds = 5
	if _, err := a.UpdateQueue(ctx, cur); err != nil {
		t.Fatal(err)
	}
	got, _ := b.GetQueueByName(ctx, q.ProjectID, "q")
	if got.VisibilityTimeoutSeconds != 5 {
		t.Fatalf("replica b sees %d after an update on a", got.VisibilityTimeoutSeconds)
	}
	// A stale version conflicts and drops the stale copy, so a re-read sees the stored one.
	stale := cur
	if _, err := b.UpdateQueue(ctx, stale); !errors.Is(err, meta.ErrVersionConflict) {
		t.Fatalf("stale update: %v", err)
	}
	if _, err := a.DeleteQueue(ctx, q.ProjectID, q.ID); err != nil {
		t.Fatal(err)
	}
	if !b.Gone(q.ID) {
		t.Fatal("replica b was not told of the deletion")
	}
	if _, err := b.GetQueueByName(ctx, q.ProjectID, "q"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("deleted queue still served from b's cache: %v", err)
	}
}

func TestRevocationInvalidates(t *testing.T) {
	ctx := context.Background()
	_, a, b, clk, q := setup(t)
	tok := meta.Token{ID: ids.New(), ProjectID: q.ProjectID, Name: "t", Scopes: []string{"*"}, CreatedAt: clk.Now()}
	if err := a.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.GetToken(ctx, q.ProjectID, tok.ID); got.RevokedAt != nil {
		t.Fatal("new token revoked")
	}
	if err := a.RevokeToken(ctx, q.ProjectID, tok.ID, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.GetToken(ctx, q.ProjectID, tok.ID); got.RevokedAt == nil {
		t.Fatal("replica b still holds the token as live")
	}
}
