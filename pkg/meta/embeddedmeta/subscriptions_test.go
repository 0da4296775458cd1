package embeddedmeta_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/embeddedmeta"
	"github.com/queueshq/queues/pkg/meta/metatest"
)

func TestSubscriptionConformance(t *testing.T) {
	t.Parallel()
	metatest.RunSubscriptions(t, func(t *testing.T) metatest.SubscriptionStore {
		return open(t, filepath.Join(t.TempDir(), "meta.db"))
	})
}

// TestSubscriptionRestart: subscriptions (rotated secrets, pause, versions) and attempts logs
// are there after closing and reopening the file; deleting a subscription after the restart
// deletes its log too.
func TestSubscriptionRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := embeddedmeta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	p := meta.Project{ID: ids.New(), Name: "default", CreatedAt: now}
	qa := meta.Queue{ID: ids.New(), ProjectID: p.ID, Name: "a", Type: "standard", CreatedAt: now, UpdatedAt: now}
	qb := meta.Queue{ID: ids.New(), ProjectID: p.ID, Name: "b", Type: "fifo", CreatedAt: now, UpdatedAt: now}
	sa := meta.Subscription{ID: ids.New(), QueueID: qa.ID, ProjectID: p.ID, Endpoint: "http://127.0.0.1:9/a",
		BatchSize: 10, MaxInFlight: 10, TimeoutSeconds: 30, Secret: "whsec_YQ==", CreatedAt: now, UpdatedAt: now}
	sb := meta.Subscription{ID: ids.New(), QueueID: qb.ID, ProjectID: p.ID, Endpoint: "https://example.com/b",
		BatchSize: 1, BatchWindowMs: 200, MaxInFlight: 1, TimeoutSeconds: 5, Secret: "whsec_Yg==", CreatedAt: now, UpdatedAt: now}
	for _, err := range []error{
		s.CreateProject(ctx, p), s.CreateQueue(ctx, qa), s.CreateQueue(ctx, qb),
		s.CreateSubscription(ctx, sa), s.CreateSubscription(ctx, sb),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Rotate and pause a.
	sa.Version = 1
	sa.PreviousSecret, sa.Secret = sa.Secret, "whsec_Yw=="
	sa.PreviousExpiresAt = now.Add(24 * time.Hour)
	sa.Paused = true
	sa.UpdatedAt = now.Add(time.Minute)
	sa, err = s.UpdateSubscription(ctx, sa)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := s.AppendAttempt(ctx, sa.ID, fmt.Appendf(nil, "a%d", i), 3); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendAttempt(ctx, sb.ID, []byte("b0"), 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path)
	got, err := s.GetSubscription(ctx, qa.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got != sa || got.Version != 2 || !got.Paused || !slices.Equal(got.Secrets(now), []string{"whsec_Yw==", "whsec_YQ=="}) {
		t.Fatalf("subscription after restart:\n got %+v\nwant %+v", got, sa)
	}
	subs, next, err := s.ListSubscriptions(ctx, meta.Page{})
	if err != nil || len(subs) != 2 || next != "" {
		t.Fatalf("list after restart: %d, %q, %v", len(subs), next, err)
	}
	recent := func(id ids.ID, limit int) []string {
		t.Helper()
		rs, err := s.RecentAttempts(ctx, id, limit)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = string(r)
		}
		return out
	}
	if got := recent(sa.ID, 10); !slices.Equal(got, []string{"a4", "a3", "a2"}) {
		t.Fatalf("attempts of a after restart: %q, want the newest 3, newest first", got)
	}
	if got := recent(sa.ID, 2); !slices.Equal(got, []string{"a4", "a3"}) {
		t.Fatalf("2 attempts of a: %q", got)
	}
	// The log goes on after the restart, still bounded.
	if err := s.AppendAttempt(ctx, sa.ID, []byte("a5"), 3); err != nil {
		t.Fatal(err)
	}
	if got := recent(sa.ID, 10); !slices.Equal(got, []string{"a5", "a4", "a3"}) {
		t.Fatalf("attempts of a after one more: %q", got)
	}
	// Stale versions still conflict after the restart.
	stale := sa
	stale.Version = 1
	if _, err := s.UpdateSubscription(ctx, stale); err != meta.ErrSubscriptionConflict {
		t.Fatalf("stale update after restart: %v", err)
	}
	if err := s.DeleteSubscription(ctx, qa.ID); err != nil {
		t.Fatal(err)
	}
	if got := recent(sa.ID, 10); len(got) != 0 {
		t.Fatalf("attempts of a deleted subscription: %q", got)
	}
	if got := recent(sb.ID, 10); !slices.Equal(got, []string{"b0"}) {
		t.Fatalf("attempts of b: %q", got)
	}
	if _, err := s.GetSubscription(ctx, qa.ID); apierr.CodeOf(err) != apierr.NotFound {
		t.Fatalf("get after delete: %v", err)
	}
}

// TestConcurrentAttempts: appends from many goroutines (batched into shared transactions) are
// all recorded once, and the log keeps exactly the newest.
func TestConcurrentAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "meta.db"))
	sub := ids.New()
	const n, keep = 200, 100
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := s.AppendAttempt(ctx, sub, fmt.Appendf(nil, "%03d", i), keep); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rs, err := s.RecentAttempts(ctx, sub, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != keep {
		t.Fatalf("%d records kept, want %d", len(rs), keep)
	}
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[string(r)] {
			t.Fatalf("record %s kept twice", r)
		}
		seen[string(r)] = true
	}
}

func TestMoveTaskConformance(t *testing.T) {
	t.Parallel()
	metatest.RunMoveTasks(t, func(t *testing.T) meta.MoveTaskStore {
		return open(t, filepath.Join(t.TempDir(), "meta.db"))
	})
}

func TestHealthConformance(t *testing.T) {
	t.Parallel()
	metatest.RunHealth(t, func(t *testing.T) meta.HealthLog {
		return embeddedmeta.NewHealthLog(open(t, filepath.Join(t.TempDir(), "meta.db")))
	})
}
