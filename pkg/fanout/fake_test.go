package fanout_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// fakeTopics is an engine.Topics of one topic kept in memory, with hooks that inject what
// the tests need (a filter changed as the log is read, refusals, storage failures). Every
// change closes changed, so tests await states instead of sleeping.
type fakeTopics struct {
	mu       sync.Mutex
	clk      clock.Clock
	topic    ids.ID
	log      []engine.LogEntry
	bindings []engine.Binding
	// marks are the bindings' high-water marks kept "with the queue" (Copy's idempotence).
	marks  map[ids.ID]uint64
	stored map[ids.ID][]engine.CopyMessage // queue → copies, in store order
	owner  string
	until  time.Time
	active bool
	wakeAt time.Time // IdleTopic's (zero: none)

	watchers map[int]chan struct{}
	nextW    int
	changed  chan struct{}

	advances  []engine.Advance
	copyCalls []engine.CopyBatch
	unbound   []ids.ID
	idled     []uint64
	releases  int
	leaseAsks map[string]int // LeaseTopic calls by owner
	polls     int            // ActiveTopics calls
	trims     int
	trimmedAt time.Duration // the retention of the last Trim

	afterReadLog func()                                             // runs (unlocked) after each ReadLog
	copyErr      func(b engine.CopyBatch) error                     // a storage failure of a Copy
	refuse       func(m engine.CopyMessage) error                   // a per-message refusal
	advanceErr   func(as []engine.Advance) error                    // a storage failure of AdvanceBindings
	onAdvance    func(as []engine.Advance, marks map[ids.ID]uint64) // checks, under the lock
}

func newFake(clk clock.Clock) *fakeTopics {
	return &fakeTopics{clk: clk, topic: ids.New(), marks: map[ids.ID]uint64{}, stored: map[ids.ID][]engine.CopyMessage{},
		watchers: map[int]chan struct{}{}, changed: make(chan struct{})}
}

// touch wakes the tests' waits; the caller holds mu.
func (f *fakeTopics) touch() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// await waits until cond (run under the lock) holds.
func (f *fakeTopics) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok, ch := cond(), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// publish appends entries (one per attribute map) and signals the watchers, as a publish does.
func (f *fakeTopics) publish(attrs ...map[string]string) []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var seqs []uint64
	for _, a := range attrs {
		seq := uint64(len(f.log) + 1)
		f.log = append(f.log, engine.LogEntry{Sequence: seq, MessageID: ids.New(), PublishedAt: f.clk.Now(),
			Body: fmt.Sprintf("m%d", seq), Attributes: a})
		seqs = append(seqs, seq)
	}
	f.active = true
	for _, w := range f.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
	f.touch()
	return seqs
}

func (f *fakeTopics) bind(queue ids.ID, filter string, from uint64) ids.ID {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := engine.Binding{ID: ids.New(), Queue: queue, Filter: filter, Sequence: from}
	f.bindings = append(f.bindings, b)
	f.touch()
	return b.ID
}

func (f *fakeTopics) setFilter(binding ids.ID, filter string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.bindings {
		if f.bindings[i].ID == binding {
			f.bindings[i].Filter = filter
		}
	}
}

// binding reads one binding's state (the caller holds mu).
func (f *fakeTopics) binding(id ids.ID) engine.Binding {
	for _, b := range f.bindings {
		if b.ID == id {
			return b
		}
	}
	return engine.Binding{}
}

// storedSeqs lists the sequences stored in queue q (the caller holds mu).
func (f *fakeTopics) storedSeqs(q ids.ID) []uint64 {
	var s []uint64
	for _, m := range f.stored[q] {
		s = append(s, m.Sequence)
	}
	return s
}

func (f *fakeTopics) CreateTopic(context.Context, engine.Topic) error { return nil }
func (f *fakeTopics) DeleteTopic(context.Context, engine.Topic) error { return nil }
func (f *fakeTopics) Publish(context.Context, engine.Topic, []engine.PublishMessage) ([]engine.PublishResult, error) {
	return nil, apierr.New(apierr.Unavailable, "the fake publishes through publish()")
}

func (f *fakeTopics) ReadLog(_ context.Context, _ engine.Topic, from uint64, limit int) ([]engine.LogEntry, error) {
	f.mu.Lock()
	var out []engine.LogEntry
	for _, e := range f.log {
		if e.Sequence >= from && len(out) < min(limit, engine.MaxLogRead) {
			out = append(out, e)
		}
	}
	hook := f.afterReadLog
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	return out, nil
}

func (f *fakeTopics) Bounds(context.Context, engine.Topic) (engine.LogBounds, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return engine.LogBounds{First: 1, Last: uint64(len(f.log))}, nil
}

func (f *fakeTopics) SequenceAt(context.Context, engine.Topic, time.Time) (uint64, error) {
	return 0, nil
}
func (f *fakeTopics) Trim(_ context.Context, t engine.Topic) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.trims++
	f.trimmedAt = t.Retention
	f.touch()
	return nil
}
func (f *fakeTopics) State(_ context.Context, _ engine.Topic, key string) (engine.StateEntry, error) {
	return engine.StateEntry{}, engine.NoState(key)
}
func (f *fakeTopics) StatePage(context.Context, engine.Topic, int, string) ([]engine.StateEntry, string, error) {
	return nil, "", nil
}
func (f *fakeTopics) Bind(context.Context, engine.Topic, engine.Binding) error { return nil }
func (f *fakeTopics) SetFilter(_ context.Context, _ engine.Topic, b ids.ID, filter string) error {
	f.setFilter(b, filter)
	return nil
}

func (f *fakeTopics) Unbind(_ context.Context, _ engine.Topic, binding ids.ID, _ ids.ID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bindings = slices.DeleteFunc(f.bindings, func(b engine.Binding) bool { return b.ID == binding })
	delete(f.marks, binding)
	f.unbound = append(f.unbound, binding)
	f.touch()
	return nil
}

func (f *fakeTopics) Bindings(context.Context, engine.Topic) ([]engine.Binding, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bindings), nil
}

func (f *fakeTopics) AdvanceBindings(_ context.Context, _ engine.Topic, as []engine.Advance) error {
	if f.advanceErr != nil {
		if err := f.advanceErr(as); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.onAdvance != nil {
		f.onAdvance(as, f.marks)
	}
	for _, a := range as {
		for i := range f.bindings {
			b := &f.bindings[i]
			if b.ID != a.Binding {
				continue
			}
			b.Sequence = max(b.Sequence, a.Through)
			b.Copied, b.Failed = b.Copied+a.Copied, b.Failed+a.Failed
			if a.LastError != "" {
				b.LastError, b.LastErrorAt = a.LastError, f.clk.Now()
			}
		}
	}
	f.advances = append(f.advances, as...)
	f.touch()
	return nil
}

func (f *fakeTopics) Copy(_ context.Context, q engine.Queue, b engine.CopyBatch) ([]error, error) {
	if f.copyErr != nil {
		if err := f.copyErr(b); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.copyCalls = append(f.copyCalls, b)
	errs := make([]error, len(b.Messages))
	for i, m := range b.Messages {
		if m.Sequence <= f.marks[b.Binding] {
			continue
		}
		if f.refuse != nil {
			if errs[i] = f.refuse(m); errs[i] != nil {
				continue
			}
		}
		f.stored[q.ID] = append(f.stored[q.ID], m)
	}
	if n := len(b.Messages); n > 0 {
		f.marks[b.Binding] = max(f.marks[b.Binding], b.Messages[n-1].Sequence)
	}
	f.touch()
	return errs, nil
}

func (f *fakeTopics) LeaseTopic(_ context.Context, _ ids.ID, owner string, ttl time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clk.Now()
	if f.leaseAsks == nil {
		f.leaseAsks = map[string]int{}
	}
	f.leaseAsks[owner]++
	if f.owner != "" && f.owner != owner && now.Before(f.until) {
		return false, nil
	}
	f.owner, f.until = owner, now.Add(ttl)
	f.touch()
	return true, nil
}

func (f *fakeTopics) ReleaseTopic(_ context.Context, _ ids.ID, owner string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.owner == owner {
		f.owner = ""
	}
	f.releases++
	f.touch()
	return nil
}

// steal gives the lease to another replica for an hour.
func (f *fakeTopics) steal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.owner, f.until = "another replica", f.clk.Now().Add(time.Hour)
	f.touch()
}

func (f *fakeTopics) ActiveTopics(context.Context) ([]ids.ID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls++
	f.touch()
	if !f.active && (f.wakeAt.IsZero() || f.clk.Now().Before(f.wakeAt)) {
		return nil, nil
	}
	return []ids.ID{f.topic}, nil
}

func (f *fakeTopics) WakeTopic(context.Context, ids.ID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active = true
	f.touch()
	return nil
}

func (f *fakeTopics) IdleTopic(_ context.Context, _ ids.ID, last uint64, wakeAt time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if uint64(len(f.log)) == last {
		f.active, f.wakeAt = false, wakeAt
	}
	f.idled = append(f.idled, last)
	f.touch()
	return nil
}

func (f *fakeTopics) WatchTopic(ids.ID) (<-chan struct{}, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{}, 1)
	n := f.nextW
	f.nextW++
	f.watchers[n] = ch
	return ch, func() {
		f.mu.Lock()
		delete(f.watchers, n)
		f.mu.Unlock()
	}
}

// metaWorld is the metadata the runner reads: the topic, the queues, the stored bindings.
type metaWorld struct {
	mu       sync.Mutex
	topic    meta.Topic
	queues   map[ids.ID]meta.Queue
	bindings []meta.Binding
	counters map[ids.ID]meta.Counters
}

func (m *metaWorld) GetTopicByID(_ context.Context, id ids.ID) (meta.Topic, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id != m.topic.ID {
		return meta.Topic{}, meta.NotFound(meta.KindTopic, id)
	}
	return m.topic, nil
}

func (m *metaWorld) GetQueueByID(_ context.Context, id ids.ID) (meta.Queue, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.queues[id]
	if !ok {
		return meta.Queue{}, meta.NotFound(meta.KindQueue, id)
	}
	return q, nil
}

func (m *metaWorld) TopicBindings(context.Context, ids.ID) ([]meta.Binding, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.bindings), nil
}

func (m *metaWorld) Add(project ids.ID, c meta.Counters) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.counters[project]
	cur.MessagesSent += c.MessagesSent
	cur.BytesIn += c.BytesIn
	m.counters[project] = cur
}

func (m *metaWorld) MaxStoredBytes(context.Context, ids.ID) (int64, error) { return 1 << 30, nil }
