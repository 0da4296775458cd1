package metatest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// TopicStore is what RunTopics tests: a store that keeps topics and bindings and counts
// topics for the maxTopics quota.
type TopicStore interface {
	TenancyStore
	meta.TopicStore
}

// RunTopics runs the conformance suite of meta.TopicStore; newStore returns a fresh, empty
// store. It pins, beyond the interface's documentation: creates store Version 1 whatever the
// argument says; UpdateTopic and UpdateBinding take UpdatedAt from their argument and keep
// everything else but RetentionSeconds / Filter; ListTopics is in byte order of the names with
// "" as the last page's cursor and cursors valid only for their listing; a topic's name is
// independent of the queues' names; when several refusals apply to a binding, NotFound (queue,
// then topic) comes before BindingExists, which comes before the quotas.
func RunTopics(t *testing.T, newStore func(t *testing.T) TopicStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s TopicStore)
	}{
		{"CreateGet", testTopicCreateGet},
		{"NameUnique", testTopicNameUnique},
		{"ConcurrentCreate", testTopicConcurrentCreate},
		{"List", testTopicList},
		{"ListBadCursor", testTopicListBadCursor},
		{"Update", testTopicUpdate},
		{"Delete", testTopicDelete},
		{"DeleteManyBindings", testTopicDeleteManyBindings},
		{"DeleteRacesBind", testTopicDeleteRacesBind},
		{"Quota", testTopicQuota},
		{"QuotaConcurrent", testTopicQuotaConcurrent},
		{"BindingCreateGet", testBindingCreateGet},
		{"BindingRefusals", testBindingRefusals},
		{"BindingOnePerPair", testBindingOnePerPair},
		{"SourcesPerQueue", testSourcesPerQueue},
		{"BindingsPerTopic", testBindingsPerTopic},
		{"BindingUpdate", testBindingUpdate},
		{"BindingUpdateConcurrent", testBindingUpdateConcurrent},
		{"BindingDelete", testBindingDelete},
		{"DeleteQueueBindings", testDeleteQueueBindings},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func topicValue(pid ids.ID, name string) meta.Topic {
	return meta.Topic{ID: ids.New(), ProjectID: pid, Name: name, Type: "standard",
		RetentionSeconds: meta.DefaultTopicRetentionSeconds, CreatedAt: base, UpdatedAt: base}
}

func newTopic(t *testing.T, s TopicStore, pid ids.ID, name string) meta.Topic {
	t.Helper()
	tp := topicValue(pid, name)
	must(t, s.CreateTopicWithin(ctxOf(t), tp, 0), "CreateTopicWithin "+name)
	tp.Version = 1
	return tp
}

func bindingValue(q meta.Queue, tp meta.Topic) meta.Binding {
	return meta.Binding{ID: ids.New(), ProjectID: q.ProjectID, QueueID: q.ID, TopicID: tp.ID,
		Filter: `{"attributes":{"kind":"a"}}`, From: "now", StartSequence: 7, CreatedAt: base, UpdatedAt: base}
}

func newBinding(t *testing.T, s TopicStore, q meta.Queue, tp meta.Topic) meta.Binding {
	t.Helper()
	b := bindingValue(q, tp)
	must(t, s.CreateBinding(ctxOf(t), b), "CreateBinding "+q.Name+" <- "+tp.Name)
	b.Version = 1
	return b
}

func sameTopic(t *testing.T, what string, got, want meta.Topic) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("%s: times %v/%v, want %v/%v", what, got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
	got.CreatedAt, got.UpdatedAt = want.CreatedAt, want.UpdatedAt
	if got != want {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func sameBindings(t *testing.T, what string, got, want []meta.Binding) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d bindings, want %d:\n got %+v\nwant %+v", what, len(got), len(want), got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) {
			t.Fatalf("%s[%d]: times %v/%v, want %v/%v", what, i, g.CreatedAt, g.UpdatedAt, w.CreatedAt, w.UpdatedAt)
		}
		g.CreatedAt, g.UpdatedAt = w.CreatedAt, w.UpdatedAt
		if g != w {
			t.Fatalf("%s[%d]:\n got %+v\nwant %+v", what, i, g, w)
		}
	}
}

func byBindingID(a, b meta.Binding) int { return cmp.Compare(a.ID.String(), b.ID.String()) }

func wantTopicCount(t *testing.T, s TopicStore, p ids.ID, n int64) {
	t.Helper()
	c, err := s.Counts(ctxOf(t), p)
	must(t, err, "Counts")
	if c.Topics != n {
		t.Fatalf("Counts = %+v, want %d topics", c, n)
	}
	if got, err := s.CountTopics(ctxOf(t), p); err != nil || got != n {
		t.Fatalf("CountTopics = %d, %v; want %d", got, err, n)
	}
}

func testTopicCreateGet(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	other := newProject(t, s, "other")
	tp := topicValue(p.ID, "orders")
	tp.Type, tp.RetentionSeconds, tp.Version = "fifo", 0, 42
	must(t, s.CreateTopicWithin(ctx, tp, 0), "CreateTopicWithin")
	tp.Version = 1
	got, err := s.GetTopic(ctx, p.ID, tp.ID)
	must(t, err, "GetTopic")
	sameTopic(t, "GetTopic", got, tp)
	got, err = s.GetTopicByName(ctx, p.ID, "orders")
	must(t, err, "GetTopicByName")
	sameTopic(t, "GetTopicByName", got, tp)
	got, err = s.GetTopicByID(ctx, tp.ID)
	must(t, err, "GetTopicByID")
	sameTopic(t, "GetTopicByID", got, tp)
	_, err = s.GetTopic(ctx, other.ID, tp.ID)
	wantIs(t, err, meta.ErrNotFound, "GetTopic in another project")
	_, err = s.GetTopicByName(ctx, other.ID, "orders")
	wantIs(t, err, meta.ErrNotFound, "GetTopicByName in another project")
	_, err = s.GetTopicByName(ctx, p.ID, "")
	wantIs(t, err, meta.ErrNotFound, "GetTopicByName of no name")
	_, err = s.GetTopicByID(ctx, ids.New())
	wantIs(t, err, meta.ErrNotFound, "GetTopicByID of a missing topic")
	wantIs(t, s.CreateTopicWithin(ctx, topicValue(ids.New(), "x"), 0), meta.ErrNotFound, "missing project")
	zero := topicValue(p.ID, "z")
	zero.ID = ids.ID{}
	wantRefusal(t, s.CreateTopicWithin(ctx, zero, 0), meta.ErrZeroID, apierr.InvalidArgument, "zero id")
	wantRefusal(t, s.CreateTopicWithin(ctx, topicValue(p.ID, ""), 0), meta.ErrEmptyName, apierr.InvalidArgument, "no name")
}

func testTopicNameUnique(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	other := newProject(t, s, "other")
	first := newTopic(t, s, p.ID, "events")
	wantIs(t, s.CreateTopicWithin(ctx, topicValue(p.ID, "events"), 0), meta.ErrTopicNameTaken, "second topic named events")
	got, err := s.GetTopicByName(ctx, p.ID, "events")
	must(t, err, "GetTopicByName")
	sameTopic(t, "the first keeps the name", got, first)
	newTopic(t, s, other.ID, "events")
	// Topics and queues have names of their own.
	newQueue(t, s, p.ID, "events", nil)
	newQueue(t, s, p.ID, "jobs", nil)
	newTopic(t, s, p.ID, "jobs")
	wantTopicCount(t, s, p.ID, 2)
	if qs, _, err := s.ListQueues(ctx, p.ID, "", meta.Page{}); err != nil || len(qs) != 2 {
		t.Fatalf("ListQueues sees %d queues (%v), want 2: topics are not queues", len(qs), err)
	}
	wantCounts(t, s, p.ID, 2, 0)
}

func testTopicConcurrentCreate(t *testing.T, s TopicStore) {
	p := newProject(t, s, "p")
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = s.CreateTopicWithin(ctxOf(t), topicValue(p.ID, "t"), 0) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, meta.ErrTopicNameTaken):
			t.Fatalf("concurrent create: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d concurrent creates of one name succeeded, want exactly 1", ok)
	}
	wantTopicCount(t, s, p.ID, 1)
}

func listAllTopics(t *testing.T, s TopicStore, pid ids.ID, prefix string, limit int) (names []string, pages int) {
	t.Helper()
	cursor := ""
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("ListTopics does not end")
		}
		ts, next, err := s.ListTopics(ctxOf(t), pid, prefix, meta.Page{Limit: limit, Cursor: cursor})
		must(t, err, "ListTopics")
		if len(ts) > limit {
			t.Fatalf("ListTopics returned %d topics with limit %d", len(ts), limit)
		}
		for _, tp := range ts {
			names = append(names, tp.Name)
		}
		pages++
		if next == "" {
			return names, pages
		}
		cursor = next
	}
}

func testTopicList(t *testing.T, s TopicStore) {
	p := newProject(t, s, "p")
	other := newProject(t, s, "other")
	for _, n := range []string{"b-2", "a", "b-1", "c", "b-3", "B"} {
		newTopic(t, s, p.ID, n)
	}
	newTopic(t, s, other.ID, "b-0")
	newQueue(t, s, p.ID, "b-q", nil)
	names, pages := listAllTopics(t, s, p.ID, "", 2)
	if want := []string{"B", "a", "b-1", "b-2", "b-3", "c"}; !slices.Equal(names, want) || pages != 3 {
		t.Fatalf("listed %v in %d pages, want %v in 3", names, pages, want)
	}
	names, pages = listAllTopics(t, s, p.ID, "b-", 2)
	if want := []string{"b-1", "b-2", "b-3"}; !slices.Equal(names, want) || pages != 2 {
		t.Fatalf("prefix b-: %v in %d pages, want %v in 2", names, pages, want)
	}
	ts, next, err := s.ListTopics(ctxOf(t), p.ID, "zz", meta.Page{})
	if err != nil || len(ts) != 0 || next != "" {
		t.Fatalf("no match: %v, %q, %v", ts, next, err)
	}
	ts, next, err = s.ListTopics(ctxOf(t), p.ID, "", meta.Page{})
	if err != nil || len(ts) != 6 || next != "" || ts[0].Version != 1 || ts[0].ProjectID != p.ID {
		t.Fatalf("default page: %+v, %q, %v", ts, next, err)
	}
}

func testTopicListBadCursor(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	other := newProject(t, s, "other")
	for _, n := range []string{"a1", "a2", "b1"} {
		newTopic(t, s, p.ID, n)
		newQueue(t, s, p.ID, n, nil)
	}
	_, qc, err := s.ListQueues(ctx, p.ID, "", meta.Page{Limit: 1})
	must(t, err, "ListQueues")
	_, tc, err := s.ListTopics(ctx, p.ID, "", meta.Page{Limit: 1})
	must(t, err, "ListTopics")
	_, ac, err := s.ListTopics(ctx, p.ID, "a", meta.Page{Limit: 1})
	must(t, err, "ListTopics a")
	for what, c := range map[string]string{"garbage": "garbage!", "empty object": "e30", "a queue listing's": qc} {
		_, _, err := s.ListTopics(ctx, p.ID, "", meta.Page{Cursor: c})
		wantRefusal(t, err, meta.ErrBadCursor, apierr.InvalidArgument, what+" cursor")
	}
	_, _, err = s.ListTopics(ctx, other.ID, "", meta.Page{Cursor: tc})
	wantRefusal(t, err, meta.ErrBadCursor, apierr.InvalidArgument, "another project's cursor")
	_, _, err = s.ListTopics(ctx, p.ID, "b", meta.Page{Cursor: ac})
	wantRefusal(t, err, meta.ErrBadCursor, apierr.InvalidArgument, "another prefix's cursor")
	_, _, err = s.ListQueues(ctx, p.ID, "", meta.Page{Cursor: tc})
	wantRefusal(t, err, meta.ErrBadCursor, apierr.InvalidArgument, "a topic cursor to ListQueues")
}

func testTopicUpdate(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	tp := newTopic(t, s, p.ID, "t")
	next := tp
	next.RetentionSeconds, next.UpdatedAt = 60, base.Add(time.Minute)
	next.Name, next.Type, next.CreatedAt = "renamed", "fifo", base.Add(time.Hour) // ignored
	got, err := s.UpdateTopic(ctx, next)
	must(t, err, "UpdateTopic")
	want := tp
	want.RetentionSeconds, want.UpdatedAt, want.Version = 60, base.Add(time.Minute), 2
	sameTopic(t, "returned", got, want)
	read, err := s.GetTopicByName(ctx, p.ID, "t")
	must(t, err, "GetTopicByName")
	sameTopic(t, "read back", read, want)
	stale := tp
	stale.RetentionSeconds = 5
	if _, err := s.UpdateTopic(ctx, stale); err != meta.ErrTopicConflict {
		t.Fatalf("stale update: %v, want ErrTopicConflict", err)
	}
	missing := topicValue(p.ID, "nope")
	missing.Version = 1
	_, err = s.UpdateTopic(ctx, missing)
	wantIs(t, err, meta.ErrNotFound, "update of a missing topic")
	elsewhere := want
	elsewhere.ProjectID = newProject(t, s, "other").ID
	_, err = s.UpdateTopic(ctx, elsewhere)
	wantIs(t, err, meta.ErrNotFound, "update through another project")
}

func testTopicDelete(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	tp := newTopic(t, s, p.ID, "t")
	keep := newTopic(t, s, p.ID, "keep")
	q1, q2 := newQueue(t, s, p.ID, "q1", nil), newQueue(t, s, p.ID, "q2", nil)
	b1, b2 := newBinding(t, s, q1, tp), newBinding(t, s, q2, tp)
	kb := newBinding(t, s, q1, keep)
	_, _, err := s.DeleteTopic(ctx, newProject(t, s, "other").ID, tp.ID)
	wantIs(t, err, meta.ErrNotFound, "DeleteTopic through another project")
	got, bs, err := s.DeleteTopic(ctx, p.ID, tp.ID)
	must(t, err, "DeleteTopic")
	sameTopic(t, "deleted topic", got, tp)
	slices.SortFunc(bs, byBindingID)
	sameBindings(t, "deleted bindings", bs, []meta.Binding{b1, b2})
	for what, err := range map[string]error{
		"GetTopic":       func() error { _, err := s.GetTopic(ctx, p.ID, tp.ID); return err }(),
		"GetTopicByName": func() error { _, err := s.GetTopicByName(ctx, p.ID, "t"); return err }(),
		"GetTopicByID":   func() error { _, err := s.GetTopicByID(ctx, tp.ID); return err }(),
		"GetBinding":     func() error { _, err := s.GetBinding(ctx, q1.ID, b1.ID); return err }(),
		"DeleteTopic":    func() error { _, _, err := s.DeleteTopic(ctx, p.ID, tp.ID); return err }(),
	} {
		wantIs(t, err, meta.ErrNotFound, what+" after DeleteTopic")
	}
	qb, err := s.QueueBindings(ctx, q1.ID)
	must(t, err, "QueueBindings")
	sameBindings(t, "q1's bindings after the delete", qb, []meta.Binding{kb})
	tb, err := s.TopicBindings(ctx, tp.ID)
	must(t, err, "TopicBindings")
	sameBindings(t, "the deleted topic's bindings", tb, nil)
	wantTopicCount(t, s, p.ID, 1)
	// The name is free again, and the queues may bind to the new topic.
	again := newTopic(t, s, p.ID, "t")
	newBinding(t, s, q1, again)
	newBinding(t, s, q2, again)
}

func testTopicQuota(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	other := newProject(t, s, "other")
	newTopic(t, s, other.ID, "elsewhere")
	a := newTopic(t, s, p.ID, "a")
	must(t, s.CreateTopicWithin(ctx, topicValue(p.ID, "b"), 3), "b")
	must(t, s.CreateTopicWithin(ctx, topicValue(p.ID, "c"), 3), "c")
	wantTopicCount(t, s, p.ID, 3)
	wantQuota(t, s.CreateTopicWithin(ctx, topicValue(p.ID, "d"), 3), meta.LimitMaxTopics, "fourth topic")
	if _, err := s.GetTopicByName(ctx, p.ID, "d"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("the refused topic was stored (GetTopicByName: %v)", err)
	}
	// Queues do not count as topics.
	newQueue(t, s, p.ID, "q", nil)
	_, _, err := s.DeleteTopic(ctx, p.ID, a.ID)
	must(t, err, "DeleteTopic")
	wantTopicCount(t, s, p.ID, 2)
	must(t, s.CreateTopicWithin(ctx, topicValue(p.ID, "d"), 3), "after a delete")
	wantQuota(t, s.CreateTopicWithin(ctx, topicValue(p.ID, "e"), 1), meta.LimitMaxTopics, "under a lowered limit")
	wantTopicCount(t, s, p.ID, 3)
	wantTopicCount(t, s, other.ID, 1)
}

func testTopicQuotaConcurrent(t *testing.T, s TopicStore) {
	p := newProject(t, s, "p")
	const limit, tries = 4, 12
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() {
			err := s.CreateTopicWithin(ctxOf(t), topicValue(p.ID, fmt.Sprintf("t%d", i)), limit)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, meta.ErrQuota):
				refused.Add(1)
			default:
				t.Errorf("CreateTopicWithin: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != limit || refused.Load() != tries-limit {
		t.Fatalf("%d created and %d refused, want %d and %d", ok.Load(), refused.Load(), limit, tries-limit)
	}
	wantTopicCount(t, s, p.ID, limit)
}

// fillSources binds q to fresh topics until it has MaxSourcesPerQueue sources, all of which
// must succeed (the queue's count agrees with its bindings).
func fillSources(t *testing.T, s TopicStore, q meta.Queue, prefix string) {
	t.Helper()
	for i := len(queueBindings(t, s, q.ID)); i < meta.MaxSourcesPerQueue; i++ {
		newBinding(t, s, q, newTopic(t, s, q.ProjectID, fmt.Sprintf("%s%02d", prefix, i)))
	}
	wantQuota(t, s.CreateBinding(ctxOf(t), bindingValue(q, newTopic(t, s, q.ProjectID, prefix+"-over"))), meta.LimitSourcesPerQueue, "one over")
}

// testTopicDeleteManyBindings: a topic with more bindings than one store operation may take
// at once is deleted whole, and its queues' counts go down.
func testTopicDeleteManyBindings(t *testing.T, s TopicStore) {
	p := newProject(t, s, "p")
	tp := newTopic(t, s, p.ID, "t")
	const n = 60
	var qs []meta.Queue
	for i := range n {
		q := newQueue(t, s, p.ID, fmt.Sprintf("q%02d", i), nil)
		newBinding(t, s, q, tp)
		qs = append(qs, q)
	}
	fillSources(t, s, qs[n-1], "full")
	_, bs, err := s.DeleteTopic(ctxOf(t), p.ID, tp.ID)
	must(t, err, "DeleteTopic")
	if len(bs) != n || len(topicBindings(t, s, tp.ID)) != 0 {
		t.Fatalf("DeleteTopic returned %d bindings, want %d, and left %d", len(bs), n, len(topicBindings(t, s, tp.ID)))
	}
	// The full queue lost one source: room for exactly one more.
	fillSources(t, s, qs[n-1], "again")
	if got := len(queueBindings(t, s, qs[0].ID)); got != 0 {
		t.Fatalf("a queue of the deleted topic still has %d bindings", got)
	}
}

// testTopicDeleteRacesBind: binds racing a topic's delete either land before it (and are
// deleted with the topic) or are refused NotFound; none outlives the topic.
func testTopicDeleteRacesBind(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	tp := newTopic(t, s, p.ID, "t")
	var qs []meta.Queue
	for i := range 8 {
		q := newQueue(t, s, p.ID, fmt.Sprintf("q%d", i), nil)
		if i%2 == 0 {
			newBinding(t, s, q, tp)
		}
		qs = append(qs, q)
	}
	var wg sync.WaitGroup
	for _, q := range qs[1:] {
		wg.Go(func() {
			err := s.CreateBinding(ctx, bindingValue(q, tp))
			if err != nil && !errors.Is(err, meta.ErrNotFound) && !errors.Is(err, meta.ErrBindingExists) {
				t.Errorf("a bind racing the delete: %v", err)
			}
		})
	}
	_, _, err := s.DeleteTopic(ctx, p.ID, tp.ID)
	must(t, err, "DeleteTopic")
	wg.Wait()
	for _, q := range qs {
		for _, b := range queueBindings(t, s, q.ID) {
			t.Errorf("binding %s of queue %s outlived its topic", b.ID, q.Name)
		}
	}
	if bs := topicBindings(t, s, tp.ID); len(bs) != 0 {
		t.Fatalf("%d bindings of the deleted topic remain", len(bs))
	}
	wantTopicCount(t, s, p.ID, 0)
	fillSources(t, s, qs[1], "after")
}
