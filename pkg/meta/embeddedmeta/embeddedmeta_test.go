package embeddedmeta_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/embeddedmeta"
	"github.com/queueshq/queues/pkg/meta/metatest"
)

func open(t *testing.T, path string) *embeddedmeta.Store {
	t.Helper()
	s, err := embeddedmeta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	metatest.Run(t, func(t *testing.T) meta.Store { return open(t, filepath.Join(t.TempDir(), "meta.db")) })
}

// TestRestart: projects, tokens (with revocation and expiry), queues (with redrive references
// and versions) are all there after closing and reopening the file.
func TestRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := embeddedmeta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	p := meta.Project{ID: ids.New(), Name: "default", CreatedAt: now}
	exp := now.Add(time.Hour)
	tok := meta.Token{ID: ids.New(), ProjectID: p.ID, Name: "t", Scopes: []string{"*"}, CreatedAt: now, ExpiresAt: &exp}
	revoked := meta.Token{ID: ids.New(), ProjectID: p.ID, Name: "r", Scopes: []string{"queues:read"}, CreatedAt: now}
	dlq := meta.Queue{ID: ids.New(), ProjectID: p.ID, Name: "dlq", Type: "standard", CreatedAt: now, UpdatedAt: now, RetentionSeconds: 60}
	q := meta.Queue{ID: ids.New(), ProjectID: p.ID, Name: "jobs", Type: "fifo", CreatedAt: now, UpdatedAt: now,
		VisibilityTimeoutSeconds: 30, ContentBasedDedup: true, Redrive: &meta.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 3}}
	for _, err := range []error{
		s.CreateProject(ctx, p), s.CreateToken(ctx, tok), s.CreateToken(ctx, revoked),
		s.RevokeToken(ctx, p.ID, revoked.ID, now), s.CreateQueue(ctx, dlq), s.CreateQueue(ctx, q),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	q.Version = 1
	q.VisibilityTimeoutSeconds = 45
	if _, err := s.UpdateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path)
	if got, err := s.GetProject(ctx, p.ID); err != nil || got.Name != "default" || !got.CreatedAt.Equal(now) {
		t.Fatalf("project after restart: %+v, %v", got, err)
	}
	if got, err := s.GetToken(ctx, p.ID, tok.ID); err != nil || got.RevokedAt != nil || !got.ExpiresAt.Equal(exp) || !slices.Equal(got.Scopes, tok.Scopes) {
		t.Fatalf("token after restart: %+v, %v", got, err)
	}
	if got, err := s.GetToken(ctx, p.ID, revoked.ID); err != nil || got.RevokedAt == nil || !got.RevokedAt.Equal(now) {
		t.Fatalf("revoked token after restart: %+v, %v", got, err)
	}
	got, err := s.GetQueueByName(ctx, p.ID, "jobs")
	if err != nil || got.Version != 2 || got.VisibilityTimeoutSeconds != 45 || got.Redrive == nil || got.Redrive.DeadLetterQueue != dlq.ID || !got.ContentBasedDedup {
		t.Fatalf("queue after restart: %+v, %v", got, err)
	}
	if _, err := s.DeleteQueue(ctx, p.ID, dlq.ID); apierr.CodeOf(err) != apierr.QueueInUse {
		t.Fatalf("deleting a dead-letter queue in use after restart: %v", err)
	}
	if qs, _, err := s.ListQueues(ctx, p.ID, "", meta.Page{}); err != nil || len(qs) != 2 {
		t.Fatalf("list after restart: %d queues, %v", len(qs), err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
