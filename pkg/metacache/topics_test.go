package metacache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
)

// topicStub keeps topics in a map and counts the reads that reach it; the binding methods
// are not used by the cache.
type topicStub struct {
	meta.TopicStore
	mu    sync.Mutex
	m     map[ids.ID]meta.Topic
	reads atomic.Int64
}

func (s *topicStub) GetTopicByID(_ context.Context, id ids.ID) (meta.Topic, error) {
	s.reads.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.m[id]
	if !ok {
		return t, meta.ErrNotFound
	}
	return t, nil
}

func (s *topicStub) GetTopicByName(_ context.Context, p ids.ID, name string) (meta.Topic, error) {
	s.reads.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.m {
		if t.ProjectID == p && t.Name == name {
			return t, nil
		}
	}
	return meta.Topic{}, meta.ErrNotFound
}

func (s *topicStub) UpdateTopic(_ context.Context, t meta.Topic) (meta.Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[t.ID].Version != t.Version {
		return t, meta.ErrTopicConflict
	}
	t.Version++
	s.m[t.ID] = t
	return t, nil
}

func (s *topicStub) DeleteTopic(_ context.Context, _, id ids.ID) (meta.Topic, []meta.Binding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.m[id]
	delete(s.m, id)
	return t, nil, nil
}

func TestTopicsCachedAndInvalidatedEverywhere(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	bus := &LocalBus{}
	a, b := New(memmeta.New(), bus, clk, time.Second), New(memmeta.New(), bus, clk, time.Second)
	t.Cleanup(func() { a.Close(); b.Close() })
	tp := meta.Topic{ID: ids.New(), ProjectID: ids.New(), Name: "t", Type: "standard", RetentionSeconds: 60}
	store := &topicStub{m: map[ids.ID]meta.Topic{tp.ID: tp}}
	ta, tb := a.Topics(store), b.Topics(store)
	for range 3 {
		if _, err := tb.GetTopicByName(ctx, tp.ProjectID, "t"); err != nil {
			t.Fatal(err)
		}
		if _, err := tb.GetTopic(ctx, tp.ProjectID, tp.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.reads.Load(); n != 1 {
		t.Fatalf("%d store reads within the TTL, want 1", n)
	}
	if _, err := tb.GetTopic(ctx, ids.New(), tp.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("another project's view of the topic: %v", err)
	}
	tp.RetentionSeconds = 120
	if _, err := ta.UpdateTopic(ctx, tp); err != nil {
		t.Fatal(err)
	}
	got, err := tb.GetTopicByName(ctx, tp.ProjectID, "t")
	if err != nil || got.RetentionSeconds != 120 {
		t.Fatalf("replica b after an update through a: %+v, %v", got, err)
	}
	if _, _, err := ta.DeleteTopic(ctx, tp.ProjectID, tp.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.GetTopic(ctx, tp.ProjectID, tp.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("replica b after a delete through a: %v", err)
	}
}
