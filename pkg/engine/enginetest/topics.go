package enginetest

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// topicTests are the conformance cases of engine.Topics (docs/topics.md: the log, keyed state,
// bindings' fan-out state, exactly-once copies into queues, leases and the work list). An
// engine that does not implement engine.Topics skips them.
//
// Stored bytes of a topic, as these cases count them: every log entry counts
// engine.PayloadBytes of its body and attributes, and every key's state the same of its
// state's body and attributes (keys, group and dedup ids are not counted, as a queue's group
// ids are not).
func topicTests() []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"TopicPublishSequences", topicCase(testTopicPublishSequences)},
		{"TopicFIFODedup", topicCase(testTopicFIFODedup)},
		{"TopicReadLog", topicCase(testTopicReadLog)},
		{"TopicReadLogBytes", topicCase(testTopicReadLogBytes)},
		{"TopicBounds", topicCase(testTopicBounds)},
		{"TopicSequenceAt", topicCase(testTopicSequenceAt)},
		{"TopicTrimRetention", topicCase(testTopicTrimRetention)},
		{"TopicTrimRetentionZero", topicCase(testTopicTrimZero)},
		{"TopicKeyedState", topicCase(testTopicKeyedState)},
		{"TopicPatchRefused", topicCase(testTopicPatchRefused)},
		{"TopicKeyedDuplicate", topicCase(testTopicKeyedDuplicate)},
		{"TopicStatePage", topicCase(testTopicStatePage)},
		{"TopicBindings", topicCase(testTopicBindings)},
		{"TopicCopyStandard", topicCase(testTopicCopyStandard)},
		{"TopicCopyOverlapping", topicCase(testTopicCopyOverlap)},
		{"TopicRebindHeld", topicCase(testTopicRebindHeld)},
		{"TopicCopyFIFO", topicCase(testTopicCopyFIFO)},
		{"TopicCopyQuota", topicCase(testTopicCopyQuota)},
		{"TopicStoredBytes", topicCase(testTopicStoredBytes)},
		{"TopicPublishQuota", topicCase(testTopicPublishQuota)},
		{"TopicLease", topicCase(testTopicLease)},
		{"TopicActiveIdle", topicCase(testTopicActive)},
		{"TopicWakeAt", topicCase(testTopicWakeAt)},
		{"TopicWatch", topicCase(testTopicWatch)},
		{"TopicDelete", topicCase(testTopicDelete)},
	}
}

// topicSuite is one topic subtest's engine, seen as engine.Topics, and its project.
type topicSuite struct {
	*suite
	tp      engine.Topics
	project ids.ID
}

// topicCase runs fn when the engine implements engine.Topics, and skips otherwise.
func topicCase(fn func(t *testing.T, ts *topicSuite)) func(t *testing.T, s *suite) {
	return func(t *testing.T, s *suite) {
		tp, ok := s.e.(engine.Topics)
		if !ok {
			t.Skip("the engine does not implement engine.Topics")
		}
		fn(t, &topicSuite{suite: s, tp: tp, project: ids.New()})
	}
}

type topicOpt func(*engine.Topic)

func topicFIFO(t *engine.Topic) { t.Type = engine.FIFO }

func topicRetention(d time.Duration) topicOpt { return func(t *engine.Topic) { t.Retention = d } }

func (ts *topicSuite) topic(opts ...topicOpt) engine.Topic {
	ts.t.Helper()
	tp := engine.Topic{ID: ids.New(), Project: ts.project, Type: engine.Standard, Retention: 24 * time.Hour}
	for _, o := range opts {
		o(&tp)
	}
	wantNil(ts.t, "CreateTopic", ts.tp.CreateTopic(ts.ctx, tp))
	return tp
}

// projectQueue is a queue of the suite's project.
func (ts *topicSuite) projectQueue(opts ...queueOpt) engine.Queue {
	ts.t.Helper()
	return ts.queue(append([]queueOpt{func(q *engine.Queue) { q.Project = ts.project }}, opts...)...)
}

func (ts *topicSuite) publish(tp engine.Topic, msgs ...engine.PublishMessage) []engine.PublishResult {
	ts.t.Helper()
	res, err := ts.tp.Publish(ts.ctx, tp, msgs)
	if err != nil {
		ts.t.Fatalf("Publish: %v", err)
	}
	if len(res) != len(msgs) {
		ts.t.Fatalf("Publish answered %d results for %d messages", len(res), len(msgs))
	}
	return res
}

func (ts *topicSuite) pub(tp engine.Topic, bodies ...string) []engine.PublishResult {
	ts.t.Helper()
	msgs := make([]engine.PublishMessage, len(bodies))
	for i, b := range bodies {
		msgs[i] = engine.PublishMessage{Message: engine.Message{Body: b}}
	}
	return ts.publish(tp, msgs...)
}

func (ts *topicSuite) readLog(tp engine.Topic, from uint64, limit int) []engine.LogEntry {
	ts.t.Helper()
	es, err := ts.tp.ReadLog(ts.ctx, tp, from, limit)
	if err != nil {
		ts.t.Fatalf("ReadLog(%d, %d): %v", from, limit, err)
	}
	return es
}

func (ts *topicSuite) bounds(tp engine.Topic) engine.LogBounds {
	ts.t.Helper()
	b, err := ts.tp.Bounds(ts.ctx, tp)
	if err != nil {
		ts.t.Fatalf("Bounds: %v", err)
	}
	return b
}

func (ts *topicSuite) wantBounds(what string, tp engine.Topic, first, last uint64) engine.LogBounds {
	ts.t.Helper()
	b := ts.bounds(tp)
	if b.First != first || b.Last != last {
		ts.t.Fatalf("%s: bounds first %d last %d, want %d and %d", what, b.First, b.Last, first, last)
	}
	return b
}

func (ts *topicSuite) trim(tp engine.Topic) {
	ts.t.Helper()
	wantNil(ts.t, "Trim", ts.tp.Trim(ts.ctx, tp))
}

func (ts *topicSuite) storedBytes(what string, want int64) {
	ts.t.Helper()
	got, err := ts.e.StoredBytes(ts.ctx, ts.project)
	if err != nil {
		ts.t.Fatalf("%s: StoredBytes: %v", what, err)
	}
	if got != want {
		ts.t.Fatalf("%s: StoredBytes = %d, want %d", what, got, want)
	}
}

func logSeqs(es []engine.LogEntry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Sequence
	}
	return out
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// sameJSON reports whether two JSON texts hold the same value (member order aside).
func sameJSON(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("the test's own JSON %q: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

func testTopicPublishSequences(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	other := ts.topic()
	at := ts.clk.Now()
	attrs := map[string]string{"kind": "created", "region": "eu"}
	first := ts.publish(tp, engine.PublishMessage{Message: engine.Message{Body: "one", Attributes: attrs}},
		engine.PublishMessage{Message: engine.Message{Body: "two"}}, engine.PublishMessage{Message: engine.Message{Body: "three"}})
	ts.pub(other, "elsewhere") // another topic's sequences are its own
	ts.clk.Advance(time.Second)
	second := ts.pub(tp, "four", "five")
	all := append(first, second...)
	seen := map[ids.ID]bool{}
	for i, r := range all {
		if r.Sequence != uint64(i+1) || r.Duplicate || r.MessageID.IsZero() || seen[r.MessageID] {
			t.Fatalf("publish result %d: %+v, want sequence %d, a new message id, not a duplicate", i, r, i+1)
		}
		seen[r.MessageID] = true
	}
	es := ts.readLog(tp, 1, 100)
	if !slices.Equal(logSeqs(es), seqRange(1, 5)) {
		t.Fatalf("log sequences %v, want 1..5", logSeqs(es))
	}
	bodies := []string{"one", "two", "three", "four", "five"}
	for i, e := range es {
		if e.MessageID != all[i].MessageID || e.Body != bodies[i] || e.Key != "" || e.Deleted || e.GroupID != "" {
			t.Fatalf("log entry %d: %+v, want message %s body %q", i, e, all[i].MessageID, bodies[i])
		}
		want := at
		if i >= 3 {
			want = at.Add(time.Second)
		}
		wantTime(t, "PublishedAt", e.PublishedAt, want)
	}
	if !maps.Equal(es[0].Attributes, attrs) || len(es[1].Attributes) != 0 {
		t.Fatalf("log attributes %v and %v, want %v and none", es[0].Attributes, es[1].Attributes, attrs)
	}
	ts.wantBounds("after five publishes", tp, 1, 5)
	ts.wantBounds("the other topic", other, 1, 1)
}

func testTopicFIFODedup(t *testing.T, ts *topicSuite) {
	tp := ts.topic(topicFIFO)
	m := func(group, dedup, body string) engine.PublishMessage {
		return engine.PublishMessage{Message: engine.Message{Body: body, GroupID: group, DedupID: dedup}}
	}
	orig := ts.publish(tp, m("g", "d1", "first"), m("g", "", "no dedup id"))
	ts.clk.Advance(engine.DedupWindow - time.Second)
	again := ts.publish(tp, m("g", "d1", "first again"), m("g", "", "no dedup id"), m("h", "d2", "new"), m("h", "d2", "new again"))
	if !again[0].Duplicate || again[0].MessageID != orig[0].MessageID || again[0].Sequence != orig[0].Sequence {
		t.Fatalf("republish within the window: %+v, want a duplicate of %+v", again[0], orig[0])
	}
	if again[1].Duplicate || again[1].Sequence != 3 || again[2].Duplicate || again[2].Sequence != 4 {
		t.Fatalf("publishes %+v and %+v, want new entries 3 and 4", again[1], again[2])
	}
	if !again[3].Duplicate || again[3].MessageID != again[2].MessageID || again[3].Sequence != 4 {
		t.Fatalf("a dedup id repeated in one publish: %+v, want a duplicate of %+v", again[3], again[2])
	}
	ts.wantBounds("duplicates append nothing", tp, 1, 4)
	es := ts.readLog(tp, 1, 10)
	if !slices.Equal(logSeqs(es), seqRange(1, 4)) || es[0].Body != "first" || es[0].DedupID != "d1" || es[0].GroupID != "g" ||
		es[1].DedupID != "" || es[3].GroupID != "h" {
		t.Fatalf("log %+v", es)
	}
	ts.clk.Advance(time.Second)
	after := ts.publish(tp, m("g", "d1", "after the window"))
	if after[0].Duplicate || after[0].Sequence != 5 || after[0].MessageID == orig[0].MessageID {
		t.Fatalf("republish after the window: %+v, want a new entry 5", after[0])
	}
}

func testTopicReadLog(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	if es := ts.readLog(tp, 1, 10); len(es) != 0 {
		t.Fatalf("an empty log read %d entries", len(es))
	}
	ts.pub(tp, "1", "2", "3", "4", "5")
	ts.pub(tp, "6", "7")
	for _, c := range []struct {
		from  uint64
		limit int
		want  []uint64
	}{
		{0, 2, []uint64{1, 2}},
		{1, 3, []uint64{1, 2, 3}},
		{3, 100, seqRange(3, 7)},
		{7, 1, []uint64{7}},
		{8, 10, nil},
	} {
		es := ts.readLog(tp, c.from, c.limit)
		if !slices.Equal(logSeqs(es), c.want) {
			t.Fatalf("ReadLog(from %d, limit %d) = %v, want %v", c.from, c.limit, logSeqs(es), c.want)
		}
		for _, e := range es {
			if want := string(rune('0' + e.Sequence)); e.Body != want {
				t.Fatalf("entry %d has body %q, want %q", e.Sequence, e.Body, want)
			}
		}
	}
}

// testTopicReadLogBytes: a read ends before MaxLogReadBytes, holding at least one entry.
func testTopicReadLogBytes(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	big := strings.Repeat("x", engine.MaxMessageBytes)
	n := engine.MaxLogReadBytes/engine.MaxMessageBytes + 4
	for i := 0; i < n; i += engine.MaxBatch {
		bodies := make([]string, min(engine.MaxBatch, n-i))
		for j := range bodies {
			bodies[j] = big
		}
		ts.pub(tp, bodies...)
	}
	var got []uint64
	for from := uint64(1); from <= uint64(n); {
		es := ts.readLog(tp, from, engine.MaxLogRead)
		if len(es) == 0 {
			t.Fatalf("ReadLog from %d read nothing of %d entries", from, n)
		}
		size := 0
		for _, e := range es {
			size += len(e.Body)
			if e.Body != big {
				t.Fatalf("entry %d: a body of %d bytes, want %d", e.Sequence, len(e.Body), len(big))
			}
		}
		if size > engine.MaxLogReadBytes {
			t.Fatalf("ReadLog from %d read %d entries, %d bytes: past MaxLogReadBytes", from, len(es), size)
		}
		got = append(got, logSeqs(es)...)
		from = es[len(es)-1].Sequence + 1
	}
	if !slices.Equal(got, seqRange(1, uint64(n))) {
		t.Fatalf("the reads together hold %v, want 1..%d", got, n)
	}
}

func testTopicBounds(t *testing.T, ts *topicSuite) {
	tp := ts.topic(topicRetention(time.Hour))
	if b := ts.wantBounds("a new topic", tp, 1, 0); b.Bytes != 0 {
		t.Fatalf("a new topic holds %d bytes", b.Bytes)
	}
	ts.publish(tp, engine.PublishMessage{Message: engine.Message{Body: "abc", Attributes: map[string]string{"k": "vv"}}})
	ts.pub(tp, "de", "f")
	if b := ts.wantBounds("after publishes", tp, 1, 3); b.Bytes != 9 {
		t.Fatalf("the log holds %d bytes, want 9", b.Bytes)
	}
	ts.clk.Advance(time.Hour + time.Second)
	ts.trim(tp)
	if b := ts.wantBounds("after the trim", tp, 4, 3); b.Bytes != 0 {
		t.Fatalf("a trimmed log holds %d bytes, want 0", b.Bytes)
	}
	ts.pub(tp, "g")
	ts.wantBounds("a publish after the trim", tp, 4, 4)
}

func testTopicSequenceAt(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	t0 := ts.clk.Now()
	at := func(when time.Time, want uint64) {
		t.Helper()
		got, err := ts.tp.SequenceAt(ts.ctx, tp, when)
		wantNil(t, "SequenceAt", err)
		if got != want {
			t.Fatalf("SequenceAt(%s) = %d, want %d", when.Sub(t0), got, want)
		}
	}
	at(t0, 1) // nothing published yet: Last+1
	ts.pub(tp, "1")
	ts.clk.Advance(time.Minute)
	ts.pub(tp, "2", "3")
	ts.clk.Advance(time.Minute)
	ts.pub(tp, "4")
	at(t0.Add(-time.Hour), 1)
	at(t0, 1)
	at(t0.Add(time.Millisecond), 2)
	at(t0.Add(time.Minute), 2)
	at(t0.Add(time.Minute+time.Millisecond), 4)
	at(t0.Add(2*time.Minute), 4)
	at(t0.Add(2*time.Minute+time.Second), 5)
}

func testTopicTrimRetention(t *testing.T, ts *topicSuite) {
	tp := ts.topic(topicRetention(time.Hour))
	ts.pub(tp, "1", "2")
	ts.clk.Advance(30 * time.Minute)
	ts.pub(tp, "3")
	ts.trim(tp)
	ts.wantBounds("a trim before any entry is old", tp, 1, 3)
	ts.clk.Advance(31 * time.Minute)
	ts.trim(tp)
	ts.wantBounds("a trim of the first publish", tp, 3, 3)
	if es := ts.readLog(tp, 1, 10); !slices.Equal(logSeqs(es), []uint64{3}) {
		t.Fatalf("after the trim the log reads %v, want [3]", logSeqs(es))
	}
	// Retention is the caller's: a longer one keeps what is left.
	tp.Retention = 2 * time.Hour
	ts.clk.Advance(30 * time.Minute)
	ts.trim(tp)
	ts.wantBounds("a longer retention", tp, 3, 3)
	tp.Retention = time.Hour
	ts.trim(tp)
	ts.wantBounds("everything trimmed", tp, 4, 3)
	if es := ts.readLog(tp, 1, 10); len(es) != 0 {
		t.Fatalf("a trimmed log reads %v", logSeqs(es))
	}
	if r := ts.pub(tp, "4"); r[0].Sequence != 4 {
		t.Fatalf("a publish after the trim has sequence %d, want 4 (never reused)", r[0].Sequence)
	}
}

// testTopicTrimZero: at retention 0 an entry goes once every binding's cursor passed it.
func testTopicTrimZero(t *testing.T, ts *topicSuite) {
	tp := ts.topic(topicRetention(0))
	b1, b2 := ids.New(), ids.New()
	wantNil(t, "Bind", ts.tp.Bind(ts.ctx, tp, engine.Binding{ID: b1, Queue: ids.New()}))
	wantNil(t, "Bind", ts.tp.Bind(ts.ctx, tp, engine.Binding{ID: b2, Queue: ids.New()}))
	ts.pub(tp, "1", "2", "3")
	ts.clk.Advance(time.Hour)
	ts.trim(tp)
	ts.wantBounds("no binding passed an entry", tp, 1, 3)
	advance(t, ts, tp, engine.Advance{Binding: b1, Through: 3, Copied: 3}, engine.Advance{Binding: b2, Through: 1, Copied: 1})
	ts.trim(tp)
	ts.wantBounds("both bindings passed entry 1", tp, 2, 3)
	advance(t, ts, tp, engine.Advance{Binding: b2, Through: 3, Copied: 2})
	ts.trim(tp)
	ts.wantBounds("both bindings passed every entry", tp, 4, 3)
}

func advance(t *testing.T, ts *topicSuite, tp engine.Topic, as ...engine.Advance) {
	t.Helper()
	wantNil(t, "AdvanceBindings", ts.tp.AdvanceBindings(ts.ctx, tp, as))
}

func (ts *topicSuite) state(tp engine.Topic, key string) engine.StateEntry {
	ts.t.Helper()
	st, err := ts.tp.State(ts.ctx, tp, key)
	if err != nil {
		ts.t.Fatalf("State(%q): %v", key, err)
	}
	return st
}

func keyed(key, body string, merge engine.MergeMode, attrs map[string]string) engine.PublishMessage {
	return engine.PublishMessage{Message: engine.Message{Key: key, Body: body, Merge: merge, Attributes: attrs}}
}

func testTopicKeyedState(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	_, err := ts.tp.State(ts.ctx, tp, "k1")
	wantIs(t, "State of a key never published", err, engine.ErrNoState)
	r := ts.publish(tp, keyed("k1", `{"a":1}`, engine.MergeReplace, map[string]string{"x": "1"}))
	st := ts.state(tp, "k1")
	if st.Key != "k1" || st.Body != `{"a":1}` || st.Sequence != r[0].Sequence || !maps.Equal(st.Attributes, map[string]string{"x": "1"}) {
		t.Fatalf("state %+v after the first publish", st)
	}
	wantTime(t, "state PublishedAt", st.PublishedAt, ts.clk.Now())
	ts.clk.Advance(time.Second)
	ts.publish(tp, keyed("k1", `{"b":2}`, engine.MergeReplace, nil))
	if st := ts.state(tp, "k1"); st.Body != `{"b":2}` || len(st.Attributes) != 0 || st.Sequence != 2 {
		t.Fatalf("state %+v after a replace", st)
	}
	// A patch merges into the state; the merged message is what the log holds. A patch and
	// a key repeated in one publish merges into the publish's own earlier message.
	ts.publish(tp, keyed("k1", `{"c":3,"b":null}`, engine.MergePatch, map[string]string{"y": "2"}),
		keyed("k2", `{"n":1}`, engine.MergePatch, nil), keyed("k2", `{"m":2}`, engine.MergePatch, nil))
	if st := ts.state(tp, "k1"); !sameJSON(t, st.Body, `{"c":3}`) || !maps.Equal(st.Attributes, map[string]string{"y": "2"}) || st.Sequence != 3 {
		t.Fatalf("state %+v after a patch", st)
	}
	if st := ts.state(tp, "k2"); !sameJSON(t, st.Body, `{"n":1,"m":2}`) || st.Sequence != 5 {
		t.Fatalf("state %+v after two patches in one publish", st)
	}
	es := ts.readLog(tp, 3, 10)
	if len(es) != 3 || !sameJSON(t, es[0].Body, `{"c":3}`) || es[0].Key != "k1" || !sameJSON(t, es[2].Body, `{"n":1,"m":2}`) {
		t.Fatalf("log after patches: %+v", es)
	}
	del := ts.publish(tp, engine.PublishMessage{Message: engine.Message{Key: "k1"}, Delete: true})
	_, err = ts.tp.State(ts.ctx, tp, "k1")
	wantIs(t, "State of a deleted key", err, engine.ErrNoState)
	if es := ts.readLog(tp, del[0].Sequence, 1); len(es) != 1 || !es[0].Deleted || es[0].Body != "" || es[0].Key != "k1" {
		t.Fatalf("the deleting publish's entry: %+v", es)
	}
	// A patch of a key without state merges into {} (RFC 7396: its nulls are dropped).
	ts.publish(tp, keyed("k1", `{"d":4,"e":null}`, engine.MergePatch, nil))
	if st := ts.state(tp, "k1"); !sameJSON(t, st.Body, `{"d":4}`) {
		t.Fatalf("state %+v after a patch of a deleted key", st)
	}
}

// testTopicPatchRefused: a patch that is not an object, or onto a state that is not one,
// fails the publish whole with a refusal naming the message (pkg/api answers it as
// invalid_argument naming messages[i].body).
func testTopicPatchRefused(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	ts.publish(tp, keyed("num", `5`, engine.MergeReplace, nil), keyed("obj", `{"a":1}`, engine.MergeReplace, nil))
	_, err := ts.tp.Publish(ts.ctx, tp, []engine.PublishMessage{{Message: engine.Message{Body: "plain"}},
		keyed("obj", `[1,2]`, engine.MergePatch, nil)})
	wantPatchRefusal(t, err, engine.ErrPatchNotObject, 1)
	_, err = ts.tp.Publish(ts.ctx, tp, []engine.PublishMessage{keyed("num", `{"a":1}`, engine.MergePatch, nil)})
	wantPatchRefusal(t, err, engine.ErrPatchWaitingNotObject, 0)
	_, err = ts.tp.Publish(ts.ctx, tp, []engine.PublishMessage{keyed("new", `"text"`, engine.MergePatch, nil)})
	wantPatchRefusal(t, err, engine.ErrPatchNotObject, 0) // a key without state too
	ts.wantBounds("refused publishes append nothing", tp, 1, 2)
	if st := ts.state(tp, "num"); st.Body != "5" {
		t.Fatalf("state %+v after refused patches", st)
	}
	if st := ts.state(tp, "obj"); st.Body != `{"a":1}` {
		t.Fatalf("state %+v after a refused patch", st)
	}
	if _, err := ts.tp.State(ts.ctx, tp, "new"); !errors.Is(err, engine.ErrNoState) {
		t.Fatalf("a refused publish set state: %v", err)
	}
}

func testTopicStatePage(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	for _, k := range []string{"e", "b", "d", "a", "c", "f"} {
		ts.publish(tp, keyed(k, `{"k":"`+k+`"}`, engine.MergeReplace, nil))
	}
	ts.pub(tp, "unkeyed")
	ts.publish(tp, engine.PublishMessage{Message: engine.Message{Key: "f"}, Delete: true})
	var got []string
	cursor, pages := "", 0
	for {
		page, next, err := ts.tp.StatePage(ts.ctx, tp, 2, cursor)
		wantNil(t, "StatePage", err)
		if len(page) > 2 {
			t.Fatalf("a page of limit 2 holds %d", len(page))
		}
		for _, st := range page {
			if !sameJSON(t, st.Body, `{"k":"`+st.Key+`"}`) {
				t.Fatalf("state %+v", st)
			}
			got = append(got, st.Key)
		}
		pages++
		if next == "" || pages > 10 {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("state pages hold keys %v, want a..e in order", got)
	}
}

func wantPatchRefusal(t *testing.T, err, sentinel error, index int) {
	t.Helper()
	var r *engine.Refusal
	if !errors.Is(err, sentinel) || !errors.As(err, &r) || r.Index != index {
		t.Fatalf("publish: error %v, want a refusal %v of message %d", err, sentinel, index)
	}
}

// testTopicKeyedDuplicate: a fifo publish that is a duplicate (of an earlier publish, or of an
// earlier message of the same publish) changes no state, so the messages after it of the same
// key merge into the state as it is, not as the duplicate would have left it.
func testTopicKeyedDuplicate(t *testing.T, ts *topicSuite) {
	tp := ts.topic(topicFIFO)
	m := func(body string, merge engine.MergeMode, dedup string) engine.PublishMessage {
		p := keyed("k", body, merge, nil)
		p.GroupID, p.DedupID = "g", dedup
		return p
	}
	ts.publish(tp, m(`{"count":1}`, engine.MergePatch, "d1"))
	ts.publish(tp, m(`{"count":5}`, engine.MergeReplace, "d2"))
	// A client retries the first publish with one more message.
	res := ts.publish(tp, m(`{"count":1}`, engine.MergePatch, "d1"), m(`{"x":1}`, engine.MergePatch, "d3"))
	if !res[0].Duplicate || res[1].Duplicate || res[1].Sequence != 3 {
		t.Fatalf("retried publish answered %+v, want a duplicate and entry 3", res)
	}
	if st := ts.state(tp, "k"); !sameJSON(t, st.Body, `{"count":5,"x":1}`) || st.Sequence != 3 {
		t.Fatalf("state after a duplicate patch: %+v, want {\"count\":5,\"x\":1} at 3", st)
	}
	// A dedup id repeated within one publish: the repeat changes nothing either.
	res = ts.publish(tp, m(`{"y":1}`, engine.MergePatch, "d4"), m(`{"y":2,"z":1}`, engine.MergePatch, "d4"),
		m(`{"w":1}`, engine.MergePatch, "d5"))
	if res[0].Duplicate || !res[1].Duplicate || res[2].Duplicate || res[2].Sequence != 5 {
		t.Fatalf("publish with a repeated dedup id answered %+v", res)
	}
	want := `{"count":5,"x":1,"y":1,"w":1}`
	if st := ts.state(tp, "k"); !sameJSON(t, st.Body, want) || st.Sequence != 5 {
		t.Fatalf("state after a repeated dedup id: %+v, want %s at 5", st, want)
	}
	if es := ts.readLog(tp, 5, 1); len(es) != 1 || !sameJSON(t, es[0].Body, want) {
		t.Fatalf("entry 5 %+v, want the merged %s", es, want)
	}
}
