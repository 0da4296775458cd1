package embeddedmeta_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/embeddedmeta"
	"github.com/queueshq/queues/pkg/meta/metatest"
)

func TestTenancyConformance(t *testing.T) {
	t.Parallel()
	metatest.RunTenancy(t, func(t *testing.T) metatest.TenancyStore {
		return open(t, filepath.Join(t.TempDir(), "meta.db"))
	})
}

func TestTopicConformance(t *testing.T) {
	t.Parallel()
	metatest.RunTopics(t, func(t *testing.T) metatest.TopicStore {
		return open(t, filepath.Join(t.TempDir(), "meta.db"))
	})
}

// TestTopicRestart: topics and bindings are there after closing and reopening the file, and
// a file written before the topic buckets existed gets them at Open.
func TestTopicRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := embeddedmeta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	p := meta.Project{ID: ids.New(), Name: "default", CreatedAt: now}
	q := meta.Queue{ID: ids.New(), ProjectID: p.ID, Name: "q", Type: "standard", CreatedAt: now, UpdatedAt: now}
	tp := meta.Topic{ID: ids.New(), ProjectID: p.ID, Name: "t", Type: "standard", RetentionSeconds: 60, CreatedAt: now, UpdatedAt: now}
	b := meta.Binding{ID: ids.New(), ProjectID: p.ID, QueueID: q.ID, TopicID: tp.ID, From: "now", StartSequence: 3, CreatedAt: now, UpdatedAt: now}
	for _, err := range []error{s.CreateProject(ctx, p), s.CreateQueue(ctx, q), s.CreateTopicWithin(ctx, tp, 5), s.CreateBinding(ctx, b)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	got, err := s.GetTopicByName(ctx, p.ID, "t")
	if err != nil || got.ID != tp.ID || got.Version != 1 || got.RetentionSeconds != 60 {
		t.Fatalf("topic after restart: %+v, %v", got, err)
	}
	bs, err := s.TopicBindings(ctx, tp.ID)
	if err != nil || len(bs) != 1 || bs[0].ID != b.ID || bs[0].StartSequence != 3 {
		t.Fatalf("bindings after restart: %+v, %v", bs, err)
	}
	if err := s.CreateBinding(ctx, b); apierr.CodeOf(err) != apierr.BindingExists {
		t.Fatalf("the pair after restart: %v", err)
	}
}

// TestTopicBucketsAdded: a file without the topic buckets (written by a binary from before
// topics) is opened and takes topics.
func TestTopicBucketsAdded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := embeddedmeta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	p := meta.Project{ID: ids.New(), Name: "old"}
	if err := s.CreateProject(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range []string{"topics", "topicNames", "bindings", "queueBindings", "topicBindings"} {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = open(t, path)
	tp := meta.Topic{ID: ids.New(), ProjectID: p.ID, Name: "t", Type: "standard"}
	if err := s.CreateTopicWithin(context.Background(), tp, 0); err != nil {
		t.Fatalf("a topic in an older file: %v", err)
	}
}
