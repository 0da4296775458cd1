package fanout_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/fanout"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// rig is a runner over the fake engine and metadata, with a fake clock.
type rig struct {
	f   *fakeTopics
	m   *metaWorld
	clk *clock.Fake
}

func newRig(typ string) *rig {
	clk := clock.NewFake(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	f := newFake(clk)
	project := ids.New()
	m := &metaWorld{topic: meta.Topic{ID: f.topic, ProjectID: project, Name: "t", Type: typ, RetentionSeconds: 3600},
		queues: map[ids.ID]meta.Queue{}, counters: map[ids.ID]meta.Counters{}}
	return &rig{f: f, m: m, clk: clk}
}

// queue adds a queue of the topic's project and type, bound with filter from cursor 0; it
// answers the queue and the binding.
func (g *rig) queue(filter string) (ids.ID, ids.ID) {
	q := meta.Queue{ID: ids.New(), ProjectID: g.m.topic.ProjectID, Name: "q", Type: g.m.topic.Type}
	g.m.mu.Lock()
	g.m.queues[q.ID] = q
	g.m.mu.Unlock()
	b := g.f.bind(q.ID, filter, 0)
	g.m.mu.Lock()
	g.m.bindings = append(g.m.bindings, meta.Binding{ID: b, ProjectID: q.ProjectID, QueueID: q.ID, TopicID: g.f.topic, Filter: filter})
	g.m.mu.Unlock()
	return q.ID, b
}

func (g *rig) runner() *fanout.Runner {
	return &fanout.Runner{Engine: g.f, Topics: g.m, Queues: g.m, Bindings: g.m, Limits: g.m, Meter: g.m,
		Clock: g.clk, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: ids.New().String(), Poll: 10 * time.Millisecond, IdleAfter: time.Hour}
}

// run runs r until the test ends (or stop is called); stop waits for it to return.
func run(t *testing.T, r *fanout.Runner) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

func TestCopiesIntoEveryBoundQueueOnce(t *testing.T) {
	g := newRig("standard")
	q1, b1 := g.queue("")
	q2, b2 := g.queue("")
	run(t, g.runner())
	g.f.publish(map[string]string{"a": "1"}, nil, nil)
	g.f.await(t, "both bindings at 3", func() bool {
		return g.f.binding(b1).Sequence == 3 && g.f.binding(b2).Sequence == 3
	})
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	for _, q := range []ids.ID{q1, q2} {
		if got := g.f.storedSeqs(q); !slices.Equal(got, []uint64{1, 2, 3}) {
			t.Errorf("queue %s holds %v, want [1 2 3]", q, got)
		}
		for i, m := range g.f.stored[q] {
			if m.ID != g.f.log[i].MessageID {
				t.Errorf("copy %d has id %s, the published one is %s", i, m.ID, g.f.log[i].MessageID)
			}
		}
	}
	if b := g.f.binding(b1); b.Copied != 3 || b.Failed != 0 {
		t.Errorf("binding counts copied %d failed %d, want 3 and 0", b.Copied, b.Failed)
	}
	g.m.mu.Lock()
	defer g.m.mu.Unlock()
	if c := g.m.counters[g.m.topic.ProjectID]; c.MessagesSent != 6 || c.BytesIn != 2*(4+2+2) {
		t.Errorf("metered %d sent, %d bytes in; want 6 and 16", c.MessagesSent, c.BytesIn)
	}
}

// The filter that judges an entry is the one read after the entry: a filter replaced before
// a publish was answered judges that publish, even when the round read the bindings first.
func TestFilterReadAfterTheEntries(t *testing.T) {
	g := newRig("standard")
	q, b := g.queue(`{"attributes":{"color":"red"}}`)
	first := true
	g.f.afterReadLog = func() {
		if first {
			first = false
			g.f.setFilter(b, `{"attributes":{"color":"blue"}}`)
		}
	}
	run(t, g.runner())
	g.f.publish(map[string]string{"color": "blue"}, map[string]string{"color": "red"})
	g.f.await(t, "the binding at 2", func() bool { return g.f.binding(b).Sequence == 2 })
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if got := g.f.storedSeqs(q); !slices.Equal(got, []uint64{1}) {
		t.Errorf("queue holds %v, want [1] (blue, by the filter read after the entries)", got)
	}
}

func TestQueueGoneUnbinds(t *testing.T) {
	g := newRig("standard")
	gone, bGone := g.queue("")
	q, b := g.queue("")
	g.m.mu.Lock()
	delete(g.m.queues, gone)
	g.m.mu.Unlock()
	run(t, g.runner())
	g.f.publish(nil)
	g.f.await(t, "the live binding at 1 and the orphan unbound", func() bool {
		return g.f.binding(b).Sequence == 1 && slices.Contains(g.f.unbound, bGone)
	})
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if len(g.f.stored[gone]) != 0 || len(g.f.stored[q]) != 1 {
		t.Errorf("stored %d into the deleted queue and %d into the live one; want 0 and 1", len(g.f.stored[gone]), len(g.f.stored[q]))
	}
}

// A binding the metadata store lost is unbound once it has been missing for a minute, not
// at once (a create binds in the engine before it stores the binding).
func TestBindingMissingFromMetadataUnboundAfterGrace(t *testing.T) {
	g := newRig("standard")
	_, b := g.queue("")
	g.m.mu.Lock()
	g.m.bindings = nil
	g.m.mu.Unlock()
	run(t, g.runner())
	g.f.publish(nil)
	g.f.await(t, "the binding at 1", func() bool { return g.f.binding(b).Sequence == 1 })
	g.f.mu.Lock()
	early := slices.Contains(g.f.unbound, b)
	g.f.mu.Unlock()
	if early {
		t.Fatal("unbound at once; a binding being created would be lost")
	}
	g.clk.Advance(40 * time.Second) // a second look at the store, within the grace
	g.f.publish(nil)
	g.f.await(t, "the binding at 2", func() bool { return g.f.binding(b).Sequence == 2 })
	g.f.mu.Lock()
	early = slices.Contains(g.f.unbound, b)
	g.f.mu.Unlock()
	if early {
		t.Fatal("unbound 40 s after it was first missed, within the grace")
	}
	g.clk.Advance(40 * time.Second)
	g.f.publish(nil)
	g.f.await(t, "the binding unbound", func() bool { return slices.Contains(g.f.unbound, b) })
}

func TestRefusalsAdvanceAndAreRecorded(t *testing.T) {
	g := newRig("standard")
	q, b := g.queue("")
	g.f.refuse = func(m engine.CopyMessage) error {
		if m.Sequence == 2 {
			return apierr.New(apierr.QuotaExceeded, "the project's maxStoredBytes is reached")
		}
		return nil
	}
	run(t, g.runner())
	g.f.publish(nil, nil, nil)
	g.f.await(t, "the binding at 3", func() bool { return g.f.binding(b).Sequence == 3 })
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	got := g.f.binding(b)
	if got.Copied != 2 || got.Failed != 1 || got.LastError != "the project's maxStoredBytes is reached" {
		t.Errorf("binding copied %d failed %d lastError %q", got.Copied, got.Failed, got.LastError)
	}
	if s := g.f.storedSeqs(q); !slices.Equal(s, []uint64{1, 3}) {
		t.Errorf("queue holds %v, want [1 3]", s)
	}
}

// A Copy that fails on storage leaves its binding where it was (it is retried), while the
// other bindings go on; nothing is ever advanced past what its queue holds.
func TestStorageErrorsDoNotAdvance(t *testing.T) {
	g := newRig("standard")
	qBad, bBad := g.queue("")
	_, bOK := g.queue("")
	failures := 3
	g.f.copyErr = func(b engine.CopyBatch) error {
		g.f.mu.Lock()
		defer g.f.mu.Unlock()
		if b.Binding == bBad && failures > 0 {
			failures--
			return apierr.New(apierr.Unavailable, "storage down")
		}
		return nil
	}
	var past []string
	g.f.onAdvance = func(as []engine.Advance, marks map[ids.ID]uint64) {
		for _, a := range as {
			if a.Binding == bBad && a.Through > marks[bBad] {
				past = append(past, "advanced past what was copied")
			}
		}
	}
	run(t, g.runner())
	g.f.publish(nil, nil)
	g.f.await(t, "the healthy binding at 2", func() bool { return g.f.binding(bOK).Sequence == 2 })
	g.f.await(t, "the failing binding at 2 once storage is back", func() bool { return g.f.binding(bBad).Sequence == 2 })
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if len(past) > 0 {
		t.Errorf("the failing binding was %s", past[0])
	}
	if failures != 0 {
		t.Errorf("%d failures left unconsumed", failures)
	}
	if s := g.f.storedSeqs(qBad); !slices.Equal(s, []uint64{1, 2}) {
		t.Errorf("the failing binding's queue holds %v, want [1 2]", s)
	}
}

// Losing the lease stops the holder before its next round: what is published after is left
// to the new holder.
func TestLeaseLossStopsWork(t *testing.T) {
	g := newRig("standard")
	q, b := g.queue("")
	r := g.runner()
	run(t, r)
	g.f.publish(nil)
	g.f.await(t, "the binding at 1", func() bool { return g.f.binding(b).Sequence == 1 })
	g.f.steal()
	g.clk.Advance(fanout.DefaultLease / 2) // the next round renews, and finds the lease gone
	g.f.mu.Lock()
	releases := g.f.releases
	g.f.mu.Unlock()
	g.f.publish(nil)
	g.f.await(t, "the holder to let go", func() bool { return g.f.releases > releases })
	if r.Held(g.f.topic) {
		// released is recorded before held is cleared; wait for the goroutine's end
		g.f.await(t, "held cleared", func() bool { return !r.Held(g.f.topic) })
	}
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if s := g.f.storedSeqs(q); !slices.Equal(s, []uint64{1}) {
		t.Errorf("queue holds %v after the lease was lost, want [1]", s)
	}
}

// A runner ended between its Copy and its AdvanceBindings leaves the bindings behind what
// their queues hold; the next runner copies the batch again and the queue's high-water mark
// stores it once.
func TestCrashBetweenCopyAndAdvance(t *testing.T) {
	g := newRig("standard")
	q, b := g.queue("")
	first := g.runner()
	ctx, cancel := context.WithCancel(context.Background())
	copied := make(chan struct{})
	var once sync.Once
	first.AfterCopy = func(ids.ID) { once.Do(func() { cancel(); close(copied) }) }
	done := make(chan struct{})
	go func() { defer close(done); first.Run(ctx) }()
	g.f.publish(nil, nil)
	<-copied
	<-done
	g.f.mu.Lock()
	if n := len(g.f.advances); n != 0 || len(g.f.stored[q]) != 2 {
		t.Fatalf("after the crash: %d advances, %d stored; want 0 and 2", n, len(g.f.stored[q]))
	}
	g.f.mu.Unlock()
	run(t, g.runner())
	g.f.await(t, "the binding at 2", func() bool { return g.f.binding(b).Sequence == 2 })
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if s := g.f.storedSeqs(q); !slices.Equal(s, []uint64{1, 2}) {
		t.Errorf("queue holds %v, want [1 2] once each", s)
	}
}

// A caught-up topic is idled at its last sequence and let go; a later publish is fanned out
// by the runner it was published on (Published), without waiting for a poll.
func TestIdlesWhenCaughtUpAndWakesOnPublish(t *testing.T) {
	g := newRig("standard")
	q, _ := g.queue("")
	r := g.runner()
	r.IdleAfter = 10 * time.Millisecond
	r.Poll = time.Hour // only Published can bring the topic back
	run(t, r)
	g.f.publish(nil)
	r.Published(g.f.topic)
	g.f.await(t, "the topic idled at 1", func() bool { return !g.f.active && slices.Contains(g.f.idled, 1) })
	g.f.await(t, "the lease released", func() bool { return g.f.owner == "" })
	g.f.publish(nil)
	r.Published(g.f.topic)
	g.f.await(t, "the second entry copied", func() bool { return len(g.f.stored[q]) == 2 })
}

// An AdvanceBindings that fails is retried; the copies it would have recorded are not stored
// twice (the queue's mark) and the binding ends where it should.
func TestAdvanceFailureRetried(t *testing.T) {
	g := newRig("standard")
	q, b := g.queue("")
	fail := 2
	g.f.advanceErr = func([]engine.Advance) error {
		g.f.mu.Lock()
		defer g.f.mu.Unlock()
		if fail > 0 {
			fail--
			return errors.New("storage down")
		}
		return nil
	}
	run(t, g.runner())
	g.f.publish(nil, nil, nil)
	g.f.await(t, "the binding at 3", func() bool { return g.f.binding(b).Sequence == 3 })
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if s := g.f.storedSeqs(q); !slices.Equal(s, []uint64{1, 2, 3}) {
		t.Errorf("queue holds %v, want [1 2 3]", s)
	}
}

// A replica does not ask for a lease another replica held moments ago at every poll.
func TestBusyTopicNotAskedEveryPoll(t *testing.T) {
	g := newRig("standard")
	_, b := g.queue("")
	run(t, g.runner())
	g.f.publish(nil)
	g.f.await(t, "the binding at 1", func() bool { return g.f.binding(b).Sequence == 1 })
	other := g.runner()
	run(t, other)
	g.f.await(t, "the other runner refused once", func() bool { return g.f.leaseAsks[other.Owner] == 1 })
	g.f.mu.Lock()
	polls := g.f.polls
	g.f.mu.Unlock()
	g.f.await(t, "20 more polls", func() bool { return g.f.polls >= polls+20 })
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if n := g.f.leaseAsks[other.Owner]; n != 1 {
		t.Errorf("the other runner asked %d times for a lease held elsewhere, want once within the busy window", n)
	}
}

// A held topic is trimmed at most once a minute, however often it is published to.
func TestTrimmedAtMostOncePerMinute(t *testing.T) {
	g := newRig("standard")
	_, b := g.queue("")
	run(t, g.runner())
	for i := range 5 {
		g.f.publish(nil)
		g.f.await(t, "the binding caught up", func() bool { return g.f.binding(b).Sequence == uint64(i+1) })
	}
	g.f.mu.Lock()
	n := g.f.trims
	g.f.mu.Unlock()
	if n != 1 {
		t.Fatalf("trimmed %d times within a minute, want once", n)
	}
	g.clk.Advance(fanout.DefaultTrimEvery)
	g.f.publish(nil)
	g.f.await(t, "a second trim a minute later", func() bool { return g.f.trims == 2 })
}

// The lag gauge is the age of the oldest entry a held topic has not fanned out.
func TestLagReported(t *testing.T) {
	g := newRig("standard")
	g.queue("")
	attempts := make(chan struct{}, 100)
	g.f.copyErr = func(engine.CopyBatch) error {
		select {
		case attempts <- struct{}{}:
		default: // the test has what it needs
		}
		return apierr.New(apierr.Unavailable, "storage down")
	}
	r := g.runner()
	run(t, r)
	g.f.publish(nil)
	<-attempts
	g.clk.Advance(10 * time.Second)
	<-attempts // a round that began after the clock moved
	<-attempts
	if lag := r.Lag(); lag < 10 {
		t.Errorf("lag %v s, want at least 10 (the entry was published 10 s ago and is not copied)", lag)
	}
}

// A binding whose queue keeps failing does not hold its topic's other bindings back: the
// log is read from the smallest cursor of the bindings taking part, and the failing one
// waits out its backoff.
func TestFailingBindingDoesNotBlockOthers(t *testing.T) {
	g := newRig("standard")
	_, bBad := g.queue("")
	_, bOK := g.queue("")
	g.f.copyErr = func(b engine.CopyBatch) error {
		if b.Binding == bBad {
			return apierr.New(apierr.Unavailable, "this queue's storage is down")
		}
		return nil
	}
	r := g.runner()
	r.ReadLimit = 10
	run(t, r)
	attrs := make([]map[string]string, 50)
	g.f.publish(attrs...)
	g.f.await(t, "the healthy binding at 50", func() bool { return g.f.binding(bOK).Sequence == 50 })
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if s := g.f.binding(bBad).Sequence; s != 0 {
		t.Errorf("the failing binding advanced to %d", s)
	}
}

// publishing is the fake whose Publish succeeds (appending through publish) or fails.
type publishing struct {
	*fakeTopics
	fail bool
}

func (p publishing) Publish(_ context.Context, _ engine.Topic, msgs []engine.PublishMessage) ([]engine.PublishResult, error) {
	if p.fail {
		return nil, apierr.New(apierr.Unavailable, "down")
	}
	var res []engine.PublishResult
	for _, seq := range p.publish(make([]map[string]string, len(msgs))...) {
		res = append(res, engine.PublishResult{Sequence: seq})
	}
	return res, nil
}

// A publish through Notifying hands its topic to the runner at once (no poll needed); a
// failed one does not.
func TestNotifyingWakesTheRunner(t *testing.T) {
	g := newRig("standard")
	q, _ := g.queue("")
	r := g.runner()
	r.Poll = time.Hour
	run(t, r)
	g.f.await(t, "the runner's first poll (of an empty work list)", func() bool { return g.f.polls == 1 })
	tp := engine.Topic{ID: g.f.topic}
	if _, err := fanout.Notifying(publishing{g.f, true}, r).Publish(t.Context(), tp, make([]engine.PublishMessage, 1)); err == nil {
		t.Fatal("the failing publish succeeded")
	}
	if _, err := fanout.Notifying(publishing{g.f, false}, r).Publish(t.Context(), tp, make([]engine.PublishMessage, 1)); err != nil {
		t.Fatal(err)
	}
	g.f.await(t, "the copy", func() bool { return len(g.f.stored[q]) == 1 })
}

// A topic listed active whose metadata is gone (a delete cut short) is let go and not taken
// again at every poll.
func TestTopicWithoutMetadataLeftAlone(t *testing.T) {
	g := newRig("standard")
	g.queue("")
	g.m.topic.ID = ids.New() // the metadata no longer knows the engine's topic
	r := g.runner()
	run(t, r)
	g.f.publish(nil)
	g.f.await(t, "the topic taken and let go", func() bool { return g.f.leaseAsks[r.Owner] == 1 && g.f.releases == 1 })
	g.f.mu.Lock()
	polls := g.f.polls
	g.f.mu.Unlock()
	g.f.await(t, "20 more polls", func() bool { return g.f.polls >= polls+20 })
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if n := g.f.leaseAsks[r.Owner]; n != 1 {
		t.Errorf("the lease of a topic without metadata was taken %d times, want once a minute", n)
	}
}
