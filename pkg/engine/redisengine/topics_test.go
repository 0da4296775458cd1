package redisengine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
	"github.com/queueshq/queues/pkg/testservers"
)

// topicEnv is one Redis (single or Cluster) the topic tests share; each case makes its own
// engines, topics and queues (fresh ids).
type topicEnv struct {
	cluster   bool
	newClient func() redis.UniversalClient
}

func (env topicEnv) engine(t *testing.T, clk clock.Clock) *redisengine.Engine {
	return newEngine(t, env.newClient(), clk, redisengine.Options{})
}

var topicCases = []struct {
	name string
	run  func(t *testing.T, env topicEnv)
}{
	{"PublishReadBounds", testPublishReadBounds},
	{"FifoDedup", testTopicFifoDedup},
	{"KeyedState", testTopicKeyedState},
	{"ConcurrentPatches", testTopicConcurrentPatches},
	{"BindingsAdvance", testTopicBindings},
	{"TrimAndSequenceAt", testTopicTrim},
	{"TrimInSteps", testTopicTrimSteps},
	{"CounterBehindLog", testTopicCounterBehindLog},
	{"LeaseActiveWatch", testTopicLeaseActiveWatch},
	{"CopyStandardCrashWindow", testCopyCrashWindow},
	{"CopyFifo", testCopyFifo},
	{"Quota", testTopicQuota},
	{"SlotsApart", testTopicSlotsApart},
}

func runTopicCases(t *testing.T, env topicEnv) {
	for _, c := range topicCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, env) })
	}
}

func TestTopicsRedis(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	runTopicCases(t, topicEnv{newClient: func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }})
}

func TestTopicsRedisCluster(t *testing.T) {
	t.Parallel()
	addrs := testservers.RedisCluster(t)
	runTopicCases(t, topicEnv{cluster: true, newClient: func() redis.UniversalClient {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	}})
}

func newTopic(typ engine.Type) engine.Topic {
	return engine.Topic{ID: ids.New(), Project: ids.New(), Type: typ, Retention: time.Hour}
}

func publish(t *testing.T, e *redisengine.Engine, top engine.Topic, msgs ...engine.PublishMessage) []engine.PublishResult {
	t.Helper()
	res, err := e.Publish(context.Background(), top, msgs)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return res
}

func pm(body string) engine.PublishMessage {
	return engine.PublishMessage{Message: engine.Message{Body: body}}
}

func testPublishReadBounds(t *testing.T, env topicEnv) {
	ctx := context.Background()
	clk := enginetest.NewClock()
	e := env.engine(t, clk)
	top := newTopic(engine.Standard)
	if err := e.CreateTopic(ctx, top); err != nil {
		t.Fatal(err)
	}
	b, err := e.Bounds(ctx, top)
	if err != nil || b != (engine.LogBounds{First: 1, Last: 0}) {
		t.Fatalf("empty bounds %+v, %v", b, err)
	}
	res := publish(t, e, top, pm("a"), engine.PublishMessage{Message: engine.Message{Body: "bb", Attributes: map[string]string{"k": "v"}}})
	clk.Advance(time.Second)
	res = append(res, publish(t, e, top, pm("ccc"))...)
	for i, r := range res {
		if r.Sequence != uint64(i+1) || r.Duplicate || r.MessageID.IsZero() {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	b, err = e.Bounds(ctx, top)
	if err != nil || b.First != 1 || b.Last != 3 || b.Bytes != 1+2+2+3 {
		t.Fatalf("bounds %+v, %v", b, err)
	}
	if n, _ := e.StoredBytes(ctx, top.Project); n != b.Bytes {
		t.Fatalf("project stored bytes %d, topic %d", n, b.Bytes)
	}
	got, err := e.ReadLog(ctx, top, 2, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("ReadLog: %+v, %v", got, err)
	}
	if got[0].Sequence != 2 || got[0].Body != "bb" || got[0].Attributes["k"] != "v" || got[0].MessageID != res[1].MessageID ||
		!got[0].PublishedAt.Equal(enginetest.Epoch) || !got[1].PublishedAt.Equal(enginetest.Epoch.Add(time.Second)) {
		t.Fatalf("entries %+v", got)
	}
	if got, _ := e.ReadLog(ctx, top, 1, 1); len(got) != 1 || got[0].Sequence != 1 {
		t.Fatalf("limit 1: %+v", got)
	}
	if err := e.DeleteTopic(ctx, top); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.StoredBytes(ctx, top.Project); n != 0 {
		t.Fatalf("after delete the project holds %d bytes", n)
	}
}

func testTopicFifoDedup(t *testing.T, env topicEnv) {
	clk := enginetest.NewClock()
	e := env.engine(t, clk)
	top := newTopic(engine.FIFO)
	fm := func(body, dedup string) engine.PublishMessage {
		return engine.PublishMessage{Message: engine.Message{Body: body, GroupID: "g", DedupID: dedup}}
	}
	res := publish(t, e, top, fm("a", "d1"), fm("b", "d1"), fm("c", ""))
	if res[0].Duplicate || !res[1].Duplicate || res[1].MessageID != res[0].MessageID || res[1].Sequence != 1 || res[2].Sequence != 2 {
		t.Fatalf("in-batch dedup: %+v", res)
	}
	again := publish(t, e, top, fm("x", "d1"))
	if !again[0].Duplicate || again[0].MessageID != res[0].MessageID || again[0].Sequence != 1 {
		t.Fatalf("dedup across publishes: %+v", again)
	}
	clk.Advance(engine.DedupWindow)
	later := publish(t, e, top, fm("y", "d1"))
	if later[0].Duplicate || later[0].Sequence != 3 {
		t.Fatalf("after the window: %+v", later)
	}
	log, _ := e.ReadLog(context.Background(), top, 1, 10)
	if len(log) != 3 || log[0].GroupID != "g" || log[0].DedupID != "d1" || log[1].DedupID != "" {
		t.Fatalf("log %+v", log)
	}
}

func testTopicKeyedState(t *testing.T, env topicEnv) {
	ctx := context.Background()
	e := env.engine(t, enginetest.NewClock())
	top := newTopic(engine.Standard)
	keyed := func(key, body string, merge engine.MergeMode) engine.PublishMessage {
		return engine.PublishMessage{Message: engine.Message{Body: body, Key: key, Merge: merge}}
	}
	publish(t, e, top, keyed("k1", `{"a":1,"b":2}`, engine.MergeReplace), keyed("k2", `{"x":1}`, engine.MergeReplace))
	res := publish(t, e, top, keyed("k1", `{"b":null,"c":3}`, engine.MergePatch), keyed("k1", `{"d":4}`, engine.MergePatch))
	st, err := e.State(ctx, top, "k1")
	if err != nil || st.Body != `{"a":1,"c":3,"d":4}` || st.Sequence != res[1].Sequence {
		t.Fatalf("patched state %+v, %v", st, err)
	}
	log, _ := e.ReadLog(ctx, top, 3, 1)
	if len(log) != 1 || log[0].Body != `{"a":1,"c":3}` || log[0].Key != "k1" {
		t.Fatalf("the log holds the merged message: %+v", log)
	}
	_, err = e.Publish(ctx, top, []engine.PublishMessage{pm("plain"), keyed("k2", `[1]`, engine.MergePatch)})
	var r *engine.Refusal
	if !errors.As(err, &r) || r.Index != 1 || !errors.Is(err, engine.ErrPatchNotObject) {
		t.Fatalf("a patch that is not an object: %v", err)
	}
	publish(t, e, top, engine.PublishMessage{Message: engine.Message{Key: "k2"}, Delete: true})
	if _, err := e.State(ctx, top, "k2"); !errors.Is(err, &apierr.Error{Code: apierr.NotFound}) {
		t.Fatalf("deleted key: %v", err)
	}
	log, _ = e.ReadLog(ctx, top, 5, 1)
	if len(log) != 1 || !log[0].Deleted || log[0].Key != "k2" {
		t.Fatalf("delete entry %+v", log)
	}
	for _, k := range []string{"k3", "k0", "k4"} {
		publish(t, e, top, keyed(k, `{}`, engine.MergeReplace))
	}
	page, next, err := e.StatePage(ctx, top, 2, "")
	if err != nil || len(page) != 2 || page[0].Key != "k0" || page[1].Key != "k1" || next == "" {
		t.Fatalf("page 1: %+v %q %v", page, next, err)
	}
	page, next, err = e.StatePage(ctx, top, 2, next)
	if err != nil || len(page) != 2 || page[0].Key != "k3" || page[1].Key != "k4" || next != "" {
		t.Fatalf("page 2 (the last): %+v %q %v", page, next, err)
	}
	if page, _, _ := e.StatePage(ctx, top, 2, "k4"); len(page) != 0 {
		t.Fatalf("after the last key: %+v", page)
	}
	// Stored bytes: the log's entries and the state's current values, nothing else.
	var want int64
	for _, l := range mustLog(t, e, top) {
		want += engine.PayloadBytes(l.Body, l.Attributes)
	}
	all, _, _ := e.StatePage(ctx, top, 100, "")
	for _, s := range all {
		want += engine.PayloadBytes(s.Body, s.Attributes)
	}
	if b, _ := e.Bounds(ctx, top); b.Bytes != want {
		t.Fatalf("topic bytes %d, want %d", b.Bytes, want)
	}
}

func mustLog(t *testing.T, e *redisengine.Engine, top engine.Topic) []engine.LogEntry {
	t.Helper()
	log, err := e.ReadLog(context.Background(), top, 1, engine.MaxLogRead)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

func testTopicBindings(t *testing.T, env topicEnv) {
	ctx := context.Background()
	clk := enginetest.NewClock()
	e := env.engine(t, clk)
	top := newTopic(engine.Standard)
	b1 := engine.Binding{ID: ids.New(), Queue: ids.New(), Filter: `{"attributes":{"a":"b"}}`, Sequence: 4}
	b2 := engine.Binding{ID: ids.New(), Queue: ids.New()}
	for _, b := range []engine.Binding{b1, b2, b1} {
		if err := e.Bind(ctx, top, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.AdvanceBindings(ctx, top, []engine.Advance{{Binding: b1.ID, Through: 9, Copied: 3, Failed: 1, LastError: "full|x:"},
		{Binding: ids.New(), Through: 3}, {Binding: b2.ID, Through: 2, Copied: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := e.AdvanceBindings(ctx, top, []engine.Advance{{Binding: b1.ID, Through: 7, Copied: 1}}); err != nil {
		t.Fatal(err)
	}
	const odd = `{"attributes":{"a":"x|1:2"}}` // separators of the stored value inside the filter
	if err := e.SetFilter(ctx, top, b1.ID, odd); err != nil {
		t.Fatal(err)
	}
	if err := e.AdvanceBindings(ctx, top, []engine.Advance{{Binding: b1.ID, Through: 8}}); err != nil {
		t.Fatal(err)
	}
	if err := e.SetFilter(ctx, top, ids.New(), ""); !errors.Is(err, &apierr.Error{Code: apierr.NotFound}) {
		t.Fatalf("SetFilter of no binding: %v", err)
	}
	bs, err := e.Bindings(ctx, top)
	if err != nil || len(bs) != 2 {
		t.Fatalf("Bindings: %+v, %v", bs, err)
	}
	got := map[ids.ID]engine.Binding{bs[0].ID: bs[0], bs[1].ID: bs[1]}
	g1 := got[b1.ID]
	if g1.Sequence != 9 || g1.Copied != 4 || g1.Failed != 1 || g1.LastError != "full|x:" || g1.Filter != odd ||
		!g1.LastErrorAt.Equal(enginetest.Epoch) || g1.Queue != b1.Queue {
		t.Fatalf("binding 1: %+v", g1)
	}
	if g2 := got[b2.ID]; g2.Sequence != 2 || g2.Copied != 2 || g2.LastError != "" || !g2.LastErrorAt.IsZero() {
		t.Fatalf("binding 2: %+v", g2)
	}
	if err := e.Unbind(ctx, top, b1.ID, b1.Queue); err != nil {
		t.Fatal(err)
	}
	if bs, _ := e.Bindings(ctx, top); len(bs) != 1 || bs[0].ID != b2.ID {
		t.Fatalf("after unbind: %+v", bs)
	}
}

func testTopicTrim(t *testing.T, env topicEnv) {
	ctx := context.Background()
	clk := enginetest.NewClock()
	e := env.engine(t, clk)
	top := newTopic(engine.Standard)
	for range 3 {
		publish(t, e, top, pm("x"), pm("y"))
		clk.Advance(time.Minute)
	}
	for _, c := range []struct {
		at   time.Time
		want uint64
	}{{enginetest.Epoch.Add(-time.Hour), 1}, {enginetest.Epoch, 1}, {enginetest.Epoch.Add(time.Second), 3},
		{enginetest.Epoch.Add(2 * time.Minute), 5}, {enginetest.Epoch.Add(time.Hour), 7}} {
		if got, err := e.SequenceAt(ctx, top, c.at); err != nil || got != c.want {
			t.Fatalf("SequenceAt(%v) = %d, %v; want %d", c.at, got, err, c.want)
		}
	}
	clk.Advance(time.Hour - 2*time.Minute) // the first publish is now older than the hour
	if err := e.Trim(ctx, top); err != nil {
		t.Fatal(err)
	}
	if b, _ := e.Bounds(ctx, top); b.First != 3 || b.Last != 6 || b.Bytes != 4 {
		t.Fatalf("after the retention trim: %+v", b)
	}
	// Retention 0: an entry goes once every binding has passed it.
	top.Retention = 0
	b := engine.Binding{ID: ids.New(), Queue: ids.New(), Sequence: 4}
	if err := e.Bind(ctx, top, b); err != nil {
		t.Fatal(err)
	}
	if err := e.Trim(ctx, top); err != nil {
		t.Fatal(err)
	}
	if b, _ := e.Bounds(ctx, top); b.First != 5 {
		t.Fatalf("after the fan-out trim: %+v", b)
	}
	if err := e.AdvanceBindings(ctx, top, []engine.Advance{{Binding: b.ID, Through: 6}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Trim(ctx, top); err != nil {
		t.Fatal(err)
	}
	if b, _ := e.Bounds(ctx, top); b.First != 7 || b.Last != 6 || b.Bytes != 0 {
		t.Fatalf("all trimmed: %+v", b)
	}
	if n, _ := e.StoredBytes(ctx, top.Project); n != 0 {
		t.Fatalf("project bytes %d after the trim", n)
	}
	if res := publish(t, e, top, pm("z")); res[0].Sequence != 7 {
		t.Fatalf("a publish after a full trim: %+v", res)
	}
	if got, _ := e.SequenceAt(ctx, top, enginetest.Epoch); got != 7 {
		t.Fatalf("SequenceAt after trims: %d", got)
	}
}

func testTopicLeaseActiveWatch(t *testing.T, env topicEnv) {
	ctx := context.Background()
	clk := enginetest.NewClock()
	e1, e2 := env.engine(t, clk), env.engine(t, clk)
	top := newTopic(engine.Standard)
	if ok, err := e1.LeaseTopic(ctx, top.ID, "a", time.Minute); !ok || err != nil {
		t.Fatalf("first lease: %v %v", ok, err)
	}
	if ok, _ := e2.LeaseTopic(ctx, top.ID, "b", time.Minute); ok {
		t.Fatal("b took a held lease")
	}
	if ok, _ := e1.LeaseTopic(ctx, top.ID, "a", time.Minute); !ok {
		t.Fatal("a could not renew")
	}
	clk.Advance(time.Minute + time.Millisecond)
	if ok, _ := e2.LeaseTopic(ctx, top.ID, "b", time.Minute); !ok {
		t.Fatal("b could not take a lapsed lease")
	}
	if err := e1.ReleaseTopic(ctx, top.ID, "a"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := e1.LeaseTopic(ctx, top.ID, "a", time.Minute); ok {
		t.Fatal("a's release freed b's lease")
	}
	if err := e2.ReleaseTopic(ctx, top.ID, "b"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := e1.LeaseTopic(ctx, top.ID, "a", time.Minute); !ok {
		t.Fatal("a could not take a released lease")
	}

	ch, cancel := e2.WatchTopic(top.ID)
	defer cancel()
	res := publish(t, e1, top, pm("x"))
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up on the other replica")
	}
	if !slices.Contains(mustActive(t, e1), top.ID) {
		t.Fatal("a published topic is not active")
	}
	if err := e1.IdleTopic(ctx, top.ID, res[0].Sequence-1, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(mustActive(t, e1), top.ID) {
		t.Fatal("idled although published after last")
	}
	if err := e1.IdleTopic(ctx, top.ID, res[0].Sequence, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(mustActive(t, e1), top.ID) {
		t.Fatal("a caught-up topic stayed active")
	}
	// e1 named the topic before its last publish, moments ago, so it does not name it
	// before this one: the naming after the append puts it back.
	publish(t, e1, top, pm("y"))
	if !slices.Contains(mustActive(t, e1), top.ID) {
		t.Fatal("a publish after idling did not make the topic active")
	}
}

func mustActive(t *testing.T, e *redisengine.Engine) []ids.ID {
	t.Helper()
	a, err := e.ActiveTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// testTopicConcurrentPatches: patch publishes of one key from several replicas at once each
// merge into the state the others left (the version check of topic_publish.lua): every field
// lands, and the state's sequence is the last publish's.
func testTopicConcurrentPatches(t *testing.T, env topicEnv) {
	ctx := context.Background()
	clk := enginetest.NewClock()
	top := newTopic(engine.Standard)
	const writers, each = 4, 5
	engines := make([]*redisengine.Engine, writers)
	for i := range engines {
		engines[i] = env.engine(t, clk)
	}
	errs := make(chan error, writers)
	for w, e := range engines {
		go func() {
			for j := range each {
				body := fmt.Sprintf(`{"w%d_%d":%d}`, w, j, j)
				_, err := e.Publish(ctx, top, []engine.PublishMessage{{Message: engine.Message{Body: body, Key: "k", Merge: engine.MergePatch}}})
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	st, err := engines[0].State(ctx, top, "k")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]int
	if err := json.Unmarshal([]byte(st.Body), &got); err != nil || len(got) != writers*each {
		t.Fatalf("state %s: %d fields, want %d (%v)", st.Body, len(got), writers*each, err)
	}
	if st.Sequence != writers*each {
		t.Fatalf("state sequence %d, want %d", st.Sequence, writers*each)
	}
}

// testTopicTrimSteps: a log longer than one trim step is trimmed over several bounded
// script calls by one Trim, its bytes with it.
func testTopicTrimSteps(t *testing.T, env topicEnv) {
	ctx := context.Background()
	e := env.engine(t, enginetest.NewClock())
	top := newTopic(engine.Standard)
	top.Retention = 0
	msgs := make([]engine.PublishMessage, engine.MaxBatch)
	for i := range msgs {
		msgs[i] = pm("x")
	}
	const n = 1234 / engine.MaxBatch
	for range n {
		publish(t, e, top, msgs...)
	}
	if err := e.Trim(ctx, top); err != nil {
		t.Fatal(err)
	}
	last := uint64(n * engine.MaxBatch)
	if b, _ := e.Bounds(ctx, top); b.First != last+1 || b.Last != last || b.Bytes != 0 {
		t.Fatalf("after the trim: %+v", b)
	}
	if got, _ := e.StoredBytes(ctx, top.Project); got != 0 {
		t.Fatalf("project bytes %d after the trim", got)
	}
}

// testTopicCounterBehindLog: a sequence counter behind its log (a damaged store) fails the
// publish before it writes anything, rather than half-way.
func testTopicCounterBehindLog(t *testing.T, env topicEnv) {
	ctx := context.Background()
	e := env.engine(t, enginetest.NewClock())
	top := newTopic(engine.Standard)
	publish(t, e, top, pm("a"), engine.PublishMessage{Message: engine.Message{Body: "{}", Key: "k"}})
	rdb := env.newClient()
	defer rdb.Close()
	if err := rdb.Set(ctx, rediskeys.TopicSeq(top.ID), "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := e.Publish(ctx, top, []engine.PublishMessage{{Message: engine.Message{Body: `{"b":1}`, Key: "k"}}})
	if apierr.CodeOf(err) != apierr.Internal {
		t.Fatalf("publish on a damaged counter: %v", err)
	}
	if st, _ := e.State(ctx, top, "k"); st.Body != "{}" || st.Sequence != 2 {
		t.Fatalf("the refused publish changed the state: %+v", st)
	}
}

// TestTopicPublishWaitsForReplicas: with SyncReplicas, a publish is answered once a replica
// holds it, as a send is; with no replica to confirm it, it answers unavailable.
func TestTopicPublishWaitsForReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := testservers.Redis(t)
	host, port, _ := strings.Cut(primary, ":")
	opts := redisengine.Options{SyncReplicas: 1, SyncTimeout: 200 * time.Millisecond}
	lonely := newEngine(t, redis.NewClient(&redis.Options{Addr: primary}), enginetest.NewClock(), opts)
	top := newTopic(engine.Standard)
	if _, err := lonely.Publish(ctx, top, []engine.PublishMessage{pm("a")}); apierr.CodeOf(err) != apierr.Unavailable {
		t.Fatalf("a publish no replica confirmed: %v", err)
	}
	replica := testservers.Redis(t, "--replicaof", host, port)
	rc := redis.NewClient(&redis.Options{Addr: replica})
	defer rc.Close()
	if err := testservers.WaitFor(ctx, 10*time.Second, func(ctx context.Context) error {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && !strings.Contains(info, "master_link_status:up") {
			err = errors.New("replica not linked yet")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	opts.SyncTimeout = 10 * time.Second
	e := newEngine(t, redis.NewClient(&redis.Options{Addr: primary}), enginetest.NewClock(), opts)
	res, err := e.Publish(ctx, top, []engine.PublishMessage{pm("b")})
	if err != nil || res[0].Sequence != 2 {
		t.Fatalf("a publish with a replica: %+v, %v", res, err)
	}
	if n, err := rc.Get(ctx, rediskeys.TopicSeq(top.ID)).Result(); err != nil || n != "2" {
		t.Fatalf("the replica holds sequence %q, %v", n, err)
	}
}
