package metatest

import (
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

func queueBindings(t *testing.T, s TopicStore, q ids.ID) []meta.Binding {
	t.Helper()
	bs, err := s.QueueBindings(ctxOf(t), q)
	must(t, err, "QueueBindings")
	return bs
}

func topicBindings(t *testing.T, s TopicStore, tp ids.ID) []meta.Binding {
	t.Helper()
	bs, err := s.TopicBindings(ctxOf(t), tp)
	must(t, err, "TopicBindings")
	return bs
}

func testBindingCreateGet(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	q1, q2 := newQueue(t, s, p.ID, "q1", nil), newQueue(t, s, p.ID, "q2", nil)
	t1, t2 := newTopic(t, s, p.ID, "t1"), newTopic(t, s, p.ID, "t2")
	b := bindingValue(q1, t1)
	b.Filter, b.From, b.StartSequence, b.Version = "", "earliest", 1, 9
	must(t, s.CreateBinding(ctx, b), "CreateBinding")
	b.Version = 1
	got, err := s.GetBinding(ctx, q1.ID, b.ID)
	must(t, err, "GetBinding")
	sameBindings(t, "GetBinding", []meta.Binding{got}, []meta.Binding{b})
	_, err = s.GetBinding(ctx, q2.ID, b.ID)
	wantIs(t, err, meta.ErrNotFound, "GetBinding through another queue")
	_, err = s.GetBinding(ctx, q1.ID, ids.New())
	wantIs(t, err, meta.ErrNotFound, "GetBinding of a missing binding")
	// Creation order on both sides.
	b2 := newBinding(t, s, q1, t2)
	b3 := newBinding(t, s, q2, t1)
	sameBindings(t, "q1's", queueBindings(t, s, q1.ID), []meta.Binding{b, b2})
	sameBindings(t, "q2's", queueBindings(t, s, q2.ID), []meta.Binding{b3})
	sameBindings(t, "t1's", topicBindings(t, s, t1.ID), []meta.Binding{b, b3})
	sameBindings(t, "t2's", topicBindings(t, s, t2.ID), []meta.Binding{b2})
	sameBindings(t, "a queue without bindings", queueBindings(t, s, ids.New()), nil)
	sameBindings(t, "a topic without bindings", topicBindings(t, s, ids.New()), nil)
}

func testBindingRefusals(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	other := newProject(t, s, "other")
	q, tp := newQueue(t, s, p.ID, "q", nil), newTopic(t, s, p.ID, "t")
	oq, ot := newQueue(t, s, other.ID, "q", nil), newTopic(t, s, other.ID, "t")
	for what, b := range map[string]meta.Binding{
		"missing queue":           bindingValue(meta.Queue{ID: ids.New(), ProjectID: p.ID}, tp),
		"missing topic":           bindingValue(q, meta.Topic{ID: ids.New()}),
		"another project's queue": func() meta.Binding { b := bindingValue(oq, tp); b.ProjectID = p.ID; return b }(),
		"another project's topic": bindingValue(q, ot),
		"queue and topic of the binding's other project": func() meta.Binding {
			b := bindingValue(q, tp)
			b.ProjectID = other.ID
			return b
		}(),
	} {
		wantIs(t, s.CreateBinding(ctx, b), meta.ErrNotFound, what)
	}
	zero := bindingValue(q, tp)
	zero.ID = ids.ID{}
	wantRefusal(t, s.CreateBinding(ctx, zero), meta.ErrZeroID, apierr.InvalidArgument, "zero binding id")
	sameBindings(t, "after the refusals", queueBindings(t, s, q.ID), nil)
	sameBindings(t, "after the refusals", topicBindings(t, s, tp.ID), nil)
	newBinding(t, s, q, tp)
}

func testBindingOnePerPair(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	q, tp := newQueue(t, s, p.ID, "q", nil), newTopic(t, s, p.ID, "t")
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = s.CreateBinding(ctx, bindingValue(q, tp)) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, meta.ErrBindingExists):
			t.Fatalf("concurrent create: %v", err)
		}
	}
	if ok != 1 || len(queueBindings(t, s, q.ID)) != 1 || len(topicBindings(t, s, tp.ID)) != 1 {
		t.Fatalf("%d concurrent binds of one pair succeeded, want exactly 1", ok)
	}
	wantIs(t, s.CreateBinding(ctx, bindingValue(q, tp)), meta.ErrBindingExists, "a second binding")
}

// raceBindings creates bs at once and checks that want of them succeed and the others are
// refused with the quota named limit.
func raceBindings(t *testing.T, s TopicStore, bs []meta.Binding, want int64, limit string) {
	t.Helper()
	var ok atomic.Int64
	var wg sync.WaitGroup
	for _, b := range bs {
		wg.Go(func() {
			err := s.CreateBinding(ctxOf(t), b)
			if err == nil {
				ok.Add(1)
				return
			}
			if r := quotaOf(err); r == nil || r.Name != limit {
				t.Errorf("a bind over the bound: %v, want meta.ErrQuota of %s", err, limit)
			}
		})
	}
	wg.Wait()
	if ok.Load() != want {
		t.Fatalf("%d of %d racing binds succeeded, want %d", ok.Load(), len(bs), want)
	}
}

func testSourcesPerQueue(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	q := newQueue(t, s, p.ID, "q", nil)
	var ts []meta.Topic
	for i := range meta.MaxSourcesPerQueue + 4 {
		ts = append(ts, newTopic(t, s, p.ID, fmt.Sprintf("t%02d", i)))
	}
	var racing []meta.Binding
	for i, tp := range ts {
		if i < meta.MaxSourcesPerQueue-3 {
			newBinding(t, s, q, tp)
		} else {
			racing = append(racing, bindingValue(q, tp))
		}
	}
	raceBindings(t, s, racing, 3, meta.LimitSourcesPerQueue)
	if n := len(queueBindings(t, s, q.ID)); n != meta.MaxSourcesPerQueue {
		t.Fatalf("the queue has %d sources, want %d", n, meta.MaxSourcesPerQueue)
	}
	// A bound pair is still BindingExists, not the quota.
	bound := queueBindings(t, s, q.ID)[0]
	wantIs(t, s.CreateBinding(ctx, bindingValue(q, meta.Topic{ID: bound.TopicID})), meta.ErrBindingExists, "a bound pair on a full queue")
	// Unbinding one makes room for one.
	_, err := s.DeleteBinding(ctx, q.ID, bound.ID)
	must(t, err, "DeleteBinding")
	last := ts[len(ts)-1]
	if slices.ContainsFunc(queueBindings(t, s, q.ID), func(b meta.Binding) bool { return b.TopicID == last.ID }) {
		last = meta.Topic{ID: bound.TopicID}
	}
	must(t, s.CreateBinding(ctx, bindingValue(q, last)), "a bind after an unbind")
	wantQuota(t, s.CreateBinding(ctx, bindingValue(q, newTopic(t, s, p.ID, "more"))), meta.LimitSourcesPerQueue, "full again")
}

func testBindingsPerTopic(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	tp := newTopic(t, s, p.ID, "t")
	const extra = 4
	var qs []meta.Queue
	for i := range meta.MaxBindingsPerTopic + extra {
		qs = append(qs, newQueue(t, s, p.ID, fmt.Sprintf("q%03d", i), nil))
	}
	var racing []meta.Binding
	for i, q := range qs {
		if i < meta.MaxBindingsPerTopic-3 {
			newBinding(t, s, q, tp)
		} else {
			racing = append(racing, bindingValue(q, tp))
		}
	}
	raceBindings(t, s, racing, 3, meta.LimitBindingsPerTopic)
	bs := topicBindings(t, s, tp.ID)
	if len(bs) != meta.MaxBindingsPerTopic {
		t.Fatalf("the topic has %d bindings, want %d", len(bs), meta.MaxBindingsPerTopic)
	}
	if !slices.IsSortedFunc(bs, byBindingID) {
		t.Fatal("TopicBindings is not in binding id order")
	}
	// Another topic of the project is not full.
	newBinding(t, s, qs[0], newTopic(t, s, p.ID, "other"))
	_, err := s.DeleteQueueBindings(ctx, bs[0].QueueID)
	must(t, err, "DeleteQueueBindings")
	free := bs[0].QueueID
	must(t, s.CreateBinding(ctx, bindingValue(meta.Queue{ID: free, ProjectID: p.ID}, tp)), "a bind after a queue's bindings went")
}

func testBindingUpdate(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	q, tp := newQueue(t, s, p.ID, "q", nil), newTopic(t, s, p.ID, "t")
	b := newBinding(t, s, q, tp)
	next := b
	next.Filter, next.UpdatedAt = "", base.Add(time.Minute)
	next.From, next.StartSequence, next.CreatedAt = "earliest", 99, base.Add(time.Hour) // ignored
	got, err := s.UpdateBinding(ctx, next)
	must(t, err, "UpdateBinding")
	want := b
	want.Filter, want.UpdatedAt, want.Version = "", base.Add(time.Minute), 2
	sameBindings(t, "returned", []meta.Binding{got}, []meta.Binding{want})
	sameBindings(t, "the queue's", queueBindings(t, s, q.ID), []meta.Binding{want})
	sameBindings(t, "the topic's", topicBindings(t, s, tp.ID), []meta.Binding{want})
	stale := b
	stale.Filter = `{"attributes":{"kind":"b"}}`
	if _, err := s.UpdateBinding(ctx, stale); err != meta.ErrBindingConflict {
		t.Fatalf("stale update: %v, want ErrBindingConflict", err)
	}
	missing := bindingValue(q, tp)
	missing.Version = 1
	_, err = s.UpdateBinding(ctx, missing)
	wantIs(t, err, meta.ErrNotFound, "update of a missing binding")
}

func testBindingDelete(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	q, tp := newQueue(t, s, p.ID, "q", nil), newTopic(t, s, p.ID, "t")
	b := newBinding(t, s, q, tp)
	keep := newBinding(t, s, newQueue(t, s, p.ID, "q2", nil), tp)
	_, err := s.DeleteBinding(ctx, keep.QueueID, b.ID)
	wantIs(t, err, meta.ErrNotFound, "DeleteBinding through another queue")
	got, err := s.DeleteBinding(ctx, q.ID, b.ID)
	must(t, err, "DeleteBinding")
	sameBindings(t, "deleted", []meta.Binding{got}, []meta.Binding{b})
	_, err = s.DeleteBinding(ctx, q.ID, b.ID)
	wantIs(t, err, meta.ErrNotFound, "second DeleteBinding")
	_, err = s.GetBinding(ctx, q.ID, b.ID)
	wantIs(t, err, meta.ErrNotFound, "GetBinding after the delete")
	sameBindings(t, "the queue's", queueBindings(t, s, q.ID), nil)
	sameBindings(t, "the topic's", topicBindings(t, s, tp.ID), []meta.Binding{keep})
	// The pair may be bound again.
	newBinding(t, s, q, tp)
}

func testDeleteQueueBindings(t *testing.T, s TopicStore) {
	ctx := ctxOf(t)
	p := newProject(t, s, "p")
	q, other := newQueue(t, s, p.ID, "q", nil), newQueue(t, s, p.ID, "other", nil)
	t1, t2 := newTopic(t, s, p.ID, "t1"), newTopic(t, s, p.ID, "t2")
	b1, b2 := newBinding(t, s, q, t1), newBinding(t, s, q, t2)
	ob := newBinding(t, s, other, t1)
	// The queue is deleted first, then its bindings (as the API does).
	_, err := s.DeleteQueue(ctx, p.ID, q.ID)
	must(t, err, "DeleteQueue")
	bs, err := s.DeleteQueueBindings(ctx, q.ID)
	must(t, err, "DeleteQueueBindings")
	slices.SortFunc(bs, byBindingID)
	sameBindings(t, "deleted", bs, []meta.Binding{b1, b2})
	sameBindings(t, "the queue's", queueBindings(t, s, q.ID), nil)
	sameBindings(t, "t1's", topicBindings(t, s, t1.ID), []meta.Binding{ob})
	sameBindings(t, "t2's", topicBindings(t, s, t2.ID), nil)
	bs, err = s.DeleteQueueBindings(ctx, q.ID)
	if err != nil || len(bs) != 0 {
		t.Fatalf("a second DeleteQueueBindings: %v, %v; want none and no error", bs, err)
	}
	// A deleted queue takes no bindings.
	wantIs(t, s.CreateBinding(ctx, bindingValue(q, t2)), meta.ErrNotFound, "binding a deleted queue")
	// The topics keep working.
	newBinding(t, s, newQueue(t, s, p.ID, "q3", nil), t2)
}

// testBindingUpdateConcurrent: of updates racing from one Version exactly one wins, and the
// queue's and the topic's listings agree on the filter it wrote.
func testBindingUpdateConcurrent(t *testing.T, s TopicStore) {
	p := newProject(t, s, "p")
	q, tp := newQueue(t, s, p.ID, "q", nil), newTopic(t, s, p.ID, "t")
	b := newBinding(t, s, q, tp)
	const n = 6
	won := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			next := b
			next.Filter = fmt.Sprintf(`{"attributes":{"n":"%d"}}`, i)
			_, err := s.UpdateBinding(ctxOf(t), next)
			switch {
			case err == nil:
				won[i] = true
			case err != meta.ErrBindingConflict:
				t.Errorf("a racing update: %v", err)
			}
		})
	}
	wg.Wait()
	winner := slices.Index(won, true)
	if winner < 0 || slices.Index(won[winner+1:], true) >= 0 {
		t.Fatalf("winners %v, want exactly one", won)
	}
	want := fmt.Sprintf(`{"attributes":{"n":"%d"}}`, winner)
	qb, tb := queueBindings(t, s, q.ID), topicBindings(t, s, tp.ID)
	if len(qb) != 1 || len(tb) != 1 || qb[0].Filter != want || tb[0].Filter != want || qb[0].Version != 2 || tb[0].Version != 2 {
		t.Fatalf("after the race: queue's %+v, topic's %+v; want filter %s at Version 2", qb, tb, want)
	}
}
