package fanout_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/fanout"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/testservers"
)

// topicEngine is an engine that keeps topics (both of the project's do).
type topicEngine interface {
	engine.Engine
	engine.Topics
}

// signalling is an engine announcing every AdvanceBindings, so tests await the fan-out's
// progress instead of polling.
type signalling struct {
	topicEngine
	advanced chan struct{}
	released chan struct{}
	releases atomic.Int64
	trimmed  chan struct{}
}

func (s *signalling) Trim(ctx context.Context, t engine.Topic) error {
	err := s.topicEngine.Trim(ctx, t)
	select {
	case s.trimmed <- struct{}{}:
	default:
	}
	return err
}

func (s *signalling) ReleaseTopic(ctx context.Context, topic ids.ID, owner string) error {
	err := s.topicEngine.ReleaseTopic(ctx, topic, owner)
	s.releases.Add(1)
	select {
	case s.released <- struct{}{}:
	default:
	}
	return err
}

func (s *signalling) AdvanceBindings(ctx context.Context, t engine.Topic, as []engine.Advance) error {
	err := s.topicEngine.AdvanceBindings(ctx, t, as)
	select {
	case s.advanced <- struct{}{}:
	default:
	}
	return err
}

// world is a topic of type typ with two bound queues, on an engine (the embedded
// one unless the test names another) and the memory store.
type world struct {
	eng    *signalling
	store  *memmeta.Store
	topic  meta.Topic
	queues []meta.Queue
}

// engineMaker makes the engine of one test.
type engineMaker func(t *testing.T) topicEngine

// clockedMaker makes the engine of one test with the clock it is given.
type clockedMaker func(t *testing.T, clk clock.Clock) topicEngine

// onEngines runs test on the embedded engine, on Redis and on Redis Cluster (each its own
// server from pkg/testservers).
func onEngines(t *testing.T, test func(t *testing.T, mk engineMaker)) {
	onClockedEngines(t, func(t *testing.T, mk clockedMaker) {
		test(t, func(t *testing.T) topicEngine { return mk(t, clock.Real{}) })
	})
}

// onClockedEngines is onEngines for a test that sets the engines' clock.
func onClockedEngines(t *testing.T, test func(t *testing.T, mk clockedMaker)) {
	t.Run("embedded", func(t *testing.T) {
		test(t, func(t *testing.T, clk clock.Clock) topicEngine {
			e, err := embeddedengine.Open(filepath.Join(t.TempDir(), "m.db"), clk, embeddedengine.Options{NoSync: true})
			must(t, err)
			t.Cleanup(func() { e.Close() })
			return e
		})
	})
	if testing.Short() {
		return
	}
	t.Run("redis", func(t *testing.T) {
		test(t, func(t *testing.T, clk clock.Clock) topicEngine {
			return redisEngine(t, redis.NewClient(&redis.Options{Addr: servers.redis(t)}), clk)
		})
	})
	t.Run("cluster", func(t *testing.T) {
		test(t, func(t *testing.T, clk clock.Clock) topicEngine {
			return redisEngine(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: servers.cluster(t)}), clk)
		})
	})
}

// servers are one Redis and one Redis Cluster shared by the package's tests (their topics
// and queues have ids of their own), started at first use and stopped by TestMain.
var servers shared

type shared struct {
	mu           sync.Mutex
	redisAddr    string
	clusterAddrs []string
	stops        []func()
}

func (s *shared) redis(t *testing.T) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.redisAddr == "" {
		addr, stop, err := testservers.StartRedis(context.Background())
		must(t, err)
		s.redisAddr, s.stops = addr, append(s.stops, stop)
	}
	return s.redisAddr
}

func (s *shared) cluster(t *testing.T) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clusterAddrs == nil {
		addrs, stop, err := testservers.StartRedisCluster(context.Background())
		must(t, err)
		s.clusterAddrs, s.stops = addrs, append(s.stops, stop)
	}
	return s.clusterAddrs
}

// TestMain fails the package when a test leaves a goroutine running (a runner's loop, a
// notifier or a retry its Stop should have ended), once the Redis servers are stopped.
func TestMain(m *testing.M) { goleak.VerifyTestMain(stopServersAfter{m}) }

// stopServersAfter stops the shared Redis servers when the tests are done, before goleak looks.
type stopServersAfter struct{ m *testing.M }

func (s stopServersAfter) Run() int {
	defer func() {
		for _, stop := range servers.stops {
			stop()
		}
	}()
	return s.m.Run()
}

func redisEngine(t *testing.T, rdb redis.UniversalClient, clk clock.Clock) topicEngine {
	e, err := redisengine.New(rdb, clk, redisengine.Options{Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	t.Cleanup(func() { e.Close(); rdb.Close() })
	return e
}

func newWorld(t *testing.T, mk engineMaker, typ string) *world {
	t.Helper()
	e := mk(t)
	w := &world{eng: &signalling{topicEngine: e, advanced: make(chan struct{}, 1), released: make(chan struct{}, 1),
		trimmed: make(chan struct{}, 1)}, store: memmeta.New()}
	ctx, p, now := t.Context(), ids.New(), time.Now()
	must(t, w.store.CreateProject(ctx, meta.Project{ID: p, Name: "p", CreatedAt: now}))
	w.topic = meta.Topic{ID: ids.New(), ProjectID: p, Name: "orders", Type: typ, RetentionSeconds: 3600, CreatedAt: now}
	must(t, w.store.CreateTopicWithin(ctx, w.topic, 0))
	must(t, e.CreateTopic(ctx, w.engineTopic()))
	for i := range 2 {
		name := fmt.Sprintf("q%d", i)
		if typ == "fifo" {
			name += ".fifo"
		}
		q := meta.Queue{ID: ids.New(), ProjectID: p, Name: name, Type: typ, CreatedAt: now,
			VisibilityTimeoutSeconds: 30, RetentionSeconds: 3600}
		must(t, w.store.CreateQueue(ctx, q))
		must(t, e.CreateQueue(ctx, q.Engine(nil)))
		b := meta.Binding{ID: ids.New(), ProjectID: p, QueueID: q.ID, TopicID: w.topic.ID, From: "now", StartSequence: 1, CreatedAt: now}
		must(t, e.Bind(ctx, w.engineTopic(), engine.Binding{ID: b.ID, Queue: q.ID}))
		must(t, w.store.CreateBinding(ctx, b))
		w.queues = append(w.queues, q)
	}
	return w
}

func (w *world) engineTopic() engine.Topic {
	return engine.Topic{ID: w.topic.ID, Project: w.topic.ProjectID, Type: engine.Type(w.topic.Type), Retention: time.Hour}
}

func (w *world) runner() *fanout.Runner {
	return &fanout.Runner{Engine: w.eng, Topics: w.store, Queues: w.store, Bindings: w.store,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Poll: 10 * time.Millisecond, IdleAfter: time.Hour}
}

func (w *world) publish(t *testing.T, msgs ...engine.PublishMessage) []engine.PublishResult {
	t.Helper()
	res, err := w.eng.Publish(t.Context(), w.engineTopic(), msgs)
	must(t, err)
	return res
}

// awaitCursors waits until every binding has handled last.
func (w *world) awaitCursors(t *testing.T, last uint64) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		bs, err := w.eng.Bindings(t.Context(), w.engineTopic())
		must(t, err)
		if len(bs) > 0 && minCursor(bs) >= last {
			return
		}
		select {
		case <-w.eng.advanced:
		case <-deadline.C:
			t.Fatalf("bindings %+v did not reach %d", bs, last)
		}
	}
}

func minCursor(bs []engine.Binding) uint64 {
	m := bs[0].Sequence
	for _, b := range bs {
		m = min(m, b.Sequence)
	}
	return m
}

// receiveAll takes every visible message of q (ids and group, in receive order).
func (w *world) receiveAll(t *testing.T, q meta.Queue) []engine.Received {
	t.Helper()
	var got []engine.Received
	for {
		res, err := w.eng.Receive(t.Context(), q.Engine(nil), engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
		must(t, err)
		if len(res.Messages) == 0 {
			return got
		}
		got = append(got, res.Messages...)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestIntegrationPublishReachesEveryBoundQueue(t *testing.T) {
	onEngines(t, testPublishReachesEveryBoundQueue)
}

func testPublishReachesEveryBoundQueue(t *testing.T, mk engineMaker) {
	w := newWorld(t, mk, "standard")
	run(t, w.runner())
	res := w.publish(t, engine.PublishMessage{Message: engine.Message{Body: "a"}}, engine.PublishMessage{Message: engine.Message{Body: "b"}})
	w.awaitCursors(t, res[1].Sequence)
	want := []ids.ID{res[0].MessageID, res[1].MessageID}
	for _, q := range w.queues {
		var got []ids.ID
		for _, m := range w.receiveAll(t, q) {
			got = append(got, m.MessageID)
		}
		slices.SortFunc(got, func(a, b ids.ID) int { return slices.Compare(a[:], b[:]) })
		slices.SortFunc(want, func(a, b ids.ID) int { return slices.Compare(a[:], b[:]) })
		if !slices.Equal(got, want) {
			t.Errorf("queue %s received %v, want the published ids %v", q.Name, got, want)
		}
	}
}

// A runner ended between its Copy and its AdvanceBindings leaves copies in the queues and the
// cursors behind them; a second runner finishes, and every queue holds each message once.
func TestIntegrationCrashBetweenCopyAndAdvance(t *testing.T) {
	onEngines(t, testCrashBetweenCopyAndAdvance)
}

func testCrashBetweenCopyAndAdvance(t *testing.T, mk engineMaker) {
	w := newWorld(t, mk, "standard")
	first := w.runner()
	ctx, cancel := context.WithCancel(t.Context())
	first.AfterCopy = func(ids.ID) { cancel() }
	done := make(chan struct{})
	go func() { defer close(done); first.Run(ctx) }()
	var msgs []engine.PublishMessage
	for i := range 5 {
		msgs = append(msgs, engine.PublishMessage{Message: engine.Message{Body: fmt.Sprint(i)}})
	}
	res := w.publish(t, msgs...)
	<-done
	bs, err := w.eng.Bindings(t.Context(), w.engineTopic())
	must(t, err)
	for _, q := range w.queues {
		st, err := w.eng.Stats(t.Context(), q.Engine(nil))
		must(t, err)
		if st.Visible != 5 {
			t.Fatalf("after the crash queue %s holds %d, want the 5 copies", q.Name, st.Visible)
		}
	}
	if c := minCursor(bs); c != 0 {
		t.Fatalf("after the crash a binding is at %d, want 0 (no AdvanceBindings)", c)
	}
	run(t, w.runner())
	w.awaitCursors(t, res[4].Sequence)
	for _, q := range w.queues {
		got := w.receiveAll(t, q)
		seen := map[ids.ID]int{}
		for _, m := range got {
			seen[m.MessageID]++
		}
		if len(got) != 5 || len(seen) != 5 {
			t.Errorf("queue %s received %d messages (%d ids), want 5 once each", q.Name, len(got), len(seen))
		}
	}
}

// On fifo each group's order holds in every bound queue.
func TestIntegrationFifoKeepsGroupOrder(t *testing.T) {
	onEngines(t, testFifoKeepsGroupOrder)
}

func testFifoKeepsGroupOrder(t *testing.T, mk engineMaker) {
	w := newWorld(t, mk, "fifo")
	run(t, w.runner())
	var msgs []engine.PublishMessage
	for i := range 6 {
		msgs = append(msgs, engine.PublishMessage{Message: engine.Message{Body: fmt.Sprint(i), GroupID: fmt.Sprint("g", i%2)}})
	}
	res := w.publish(t, msgs...)
	w.awaitCursors(t, res[5].Sequence)
	for _, q := range w.queues {
		order := map[string][]string{}
		for {
			r, err := w.eng.Receive(t.Context(), q.Engine(nil), engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
			must(t, err)
			if len(r.Messages) == 0 {
				break
			}
			var ds []engine.Delivery
			for _, m := range r.Messages {
				order[m.GroupID] = append(order[m.GroupID], m.Body)
				ds = append(ds, m.Delivery)
			}
			_, err = w.eng.Ack(t.Context(), q.Engine(nil), ds)
			must(t, err)
		}
		if !slices.Equal(order["g0"], []string{"0", "2", "4"}) || !slices.Equal(order["g1"], []string{"1", "3", "5"}) {
			t.Errorf("queue %s received groups %v", q.Name, order)
		}
	}
}

func TestIntegrationLeaseLostMidRound(t *testing.T) {
	onEngines(t, testLeaseLostMidRound)
}

// A holder paused between its Copy and its AdvanceBindings for longer than its lease (a GC
// pause, a slow network) is overtaken by another runner, which fans out more; when the first
// one wakes and advances, nothing is stored twice and no cursor goes back.
func testLeaseLostMidRound(t *testing.T, mk engineMaker) {
	w := newWorld(t, mk, "standard")
	const lease = 200 * time.Millisecond
	paused, resume := make(chan struct{}), make(chan struct{})
	first := w.runner()
	first.Lease = lease
	var once bool
	first.AfterCopy = func(ids.ID) {
		if !once {
			once = true
			close(paused)
			<-resume
		}
	}
	run(t, first)
	var msgs []engine.PublishMessage
	for i := range 5 {
		msgs = append(msgs, engine.PublishMessage{Message: engine.Message{Body: fmt.Sprint("a", i)}})
	}
	w.publish(t, msgs...)
	<-paused
	second := w.runner()
	second.Lease = lease
	run(t, second)
	w.awaitCursors(t, 5) // the second runner took the lease once it lapsed
	for i := range msgs {
		msgs[i].Body = fmt.Sprint("b", i)
	}
	res := w.publish(t, msgs...)
	w.awaitCursors(t, res[4].Sequence)
	select { // forget the second runner's signals: the next one is the first runner's late advance
	case <-w.eng.advanced:
	default:
	}
	close(resume)
	select {
	case <-w.eng.advanced:
	case <-time.After(30 * time.Second):
		t.Fatal("the paused runner never advanced")
	}
	bs, err := w.eng.Bindings(t.Context(), w.engineTopic())
	must(t, err)
	for _, b := range bs {
		if b.Sequence != res[4].Sequence {
			t.Errorf("binding %s at %d, want %d", b.ID, b.Sequence, res[4].Sequence)
		}
	}
	for _, q := range w.queues {
		got := w.receiveAll(t, q)
		seen := map[string]int{}
		for _, m := range got {
			seen[m.Body]++
		}
		if len(got) != 10 || len(seen) != 10 {
			t.Errorf("queue %s received %d messages (%d bodies), want 10 once each", q.Name, len(got), len(seen))
		}
	}
}

func TestIntegrationDeletedTopicLetGo(t *testing.T) {
	onEngines(t, testDeletedTopicLetGo)
}

// A topic deleted while held (the API deletes its metadata, then its storage) is let go
// rather than held for ever.
func testDeletedTopicLetGo(t *testing.T, mk engineMaker) {
	w := newWorld(t, mk, "standard")
	r := w.runner()
	r.IdleAfter = 50 * time.Millisecond
	run(t, r)
	res := w.publish(t, engine.PublishMessage{Message: engine.Message{Body: "a"}})
	w.awaitCursors(t, res[0].Sequence)
	select {
	case <-w.eng.released:
	default:
	}
	held := r.Held(w.topic.ID) // false: it was let go (idle) already, and its release signalled
	_, _, err := w.store.DeleteTopic(t.Context(), w.topic.ProjectID, w.topic.ID)
	must(t, err)
	must(t, w.eng.DeleteTopic(t.Context(), w.engineTopic()))
	if held {
		select {
		case <-w.eng.released:
		case <-time.After(30 * time.Second):
			t.Fatal("the deleted topic is still held")
		}
	}
	active, err := w.eng.ActiveTopics(t.Context())
	must(t, err)
	if slices.Contains(active, w.topic.ID) {
		t.Errorf("the deleted topic is still in the work list")
	}
}

func TestIntegrationKeyedPublishes(t *testing.T) {
	onEngines(t, testKeyedPublishes)
}

// Keyed publishes are copied as the log holds them (a patch merged, a delete with an empty
// body), without a conflation key: two versions of one key are two messages in the queue.
func testKeyedPublishes(t *testing.T, mk engineMaker) {
	w := newWorld(t, mk, "standard")
	run(t, w.runner())
	w.publish(t, engine.PublishMessage{Message: engine.Message{Body: `{"a":1}`, Key: "k"}})
	w.publish(t, engine.PublishMessage{Message: engine.Message{Body: `{"b":2}`, Key: "k", Merge: engine.MergePatch}})
	res := w.publish(t, engine.PublishMessage{Message: engine.Message{Key: "k"}, Delete: true})
	w.awaitCursors(t, res[0].Sequence)
	for _, q := range w.queues {
		var bodies []string
		for _, m := range w.receiveAll(t, q) {
			bodies = append(bodies, m.Body)
		}
		if !slices.Equal(bodies, []string{`{"a":1}`, `{"a":1,"b":2}`, ""}) {
			t.Errorf("queue %s received %q", q.Name, bodies)
		}
	}
}

type fixedLimit int64

func (l fixedLimit) MaxStoredBytes(context.Context, ids.ID) (int64, error) { return int64(l), nil }

func TestIntegrationQuotaRefusalRecorded(t *testing.T) {
	onEngines(t, testQuotaRefusalRecorded)
}

// A copy the project's byte quota refuses is recorded on its binding (failed, the reason) and
// passed; the binding goes on.
func testQuotaRefusalRecorded(t *testing.T, mk engineMaker) {
	w := newWorld(t, mk, "standard")
	r := w.runner()
	body := strings.Repeat("x", 100)
	r.Limits = fixedLimit(150) // the log holds 100 bytes: no copy fits beside it
	const quotaReason = "the send would take the project's stored bytes past its limit of 150 bytes (maxStoredBytes); consume or purge messages first"
	// Published before the runner starts: on Cluster the log's bytes are folded into the
	// project's total right after the publish script, and a runner woken by the script could
	// copy in between (the test publishes with no limit, so nothing is reserved meanwhile; a
	// publish under the project's limit reserves its bytes until the fold).
	res := w.publish(t, engine.PublishMessage{Message: engine.Message{Body: body}})
	run(t, r)
	w.awaitCursors(t, res[0].Sequence)
	bs, err := w.eng.Bindings(t.Context(), w.engineTopic())
	must(t, err)
	for _, b := range bs {
		if b.Copied != 0 || b.Failed != 1 || b.LastError != quotaReason || b.LastErrorAt.IsZero() {
			t.Errorf("binding %+v, want copied 0, failed 1 and the reason %q", b, quotaReason)
		}
	}
	for _, q := range w.queues {
		if got := w.receiveAll(t, q); len(got) != 0 {
			t.Errorf("queue %s received %d messages past the quota", q.Name, len(got))
		}
	}
}

func TestIntegrationRunnersRaceExactlyOnce(t *testing.T) {
	onEngines(t, testRunnersRaceExactlyOnce)
}

// Three runners with short leases and quick idling race for one topic while it is published
// to in bursts: every bound queue still holds each message once.
func testRunnersRaceExactlyOnce(t *testing.T, mk engineMaker) {
	w := newWorld(t, mk, "standard")
	for range 3 {
		r := w.runner()
		r.Lease, r.IdleAfter, r.Poll = 60*time.Millisecond, 30*time.Millisecond, 5*time.Millisecond
		run(t, r)
	}
	var last uint64
	for burst := range 30 {
		msgs := make([]engine.PublishMessage, 10)
		for i := range msgs {
			msgs[i].Body = fmt.Sprint(burst, "-", i)
		}
		before := w.eng.releases.Load()
		res := w.publish(t, msgs...)
		last = res[len(res)-1].Sequence
		if burst%5 == 4 { // let the topic go idle now and then, for any runner to take next
			w.awaitCursors(t, last)
			for w.eng.releases.Load() == before {
				select {
				case <-w.eng.released:
				case <-time.After(30 * time.Second):
					t.Fatal("the topic was never let go")
				}
			}
		}
	}
	w.awaitCursors(t, last)
	for _, q := range w.queues {
		got := w.receiveAll(t, q)
		seen := map[string]bool{}
		for _, m := range got {
			seen[m.Body] = true
		}
		if len(got) != 300 || len(seen) != 300 {
			t.Errorf("queue %s received %d messages (%d bodies), want 300 once each", q.Name, len(got), len(seen))
		}
	}
}
