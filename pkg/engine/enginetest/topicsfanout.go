package enginetest

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// The fan-out side of engine.Topics: bindings, copies into queues, leases, the work list.

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// copies makes the copy of each entry as the fan-out does: the published id, body and
// attributes, and on fifo queues the group and a dedup id (the published one, else one
// derived from the message id).
func copies(fifo bool, es ...engine.LogEntry) []engine.CopyMessage {
	out := make([]engine.CopyMessage, len(es))
	for i, e := range es {
		m := engine.Message{Body: e.Body, Attributes: e.Attributes}
		if fifo {
			m.GroupID, m.DedupID = e.GroupID, e.DedupID
			if m.DedupID == "" {
				m.DedupID = "copy-" + e.MessageID.String()
			}
		}
		out[i] = engine.CopyMessage{Sequence: e.Sequence, Message: m, ID: e.MessageID}
	}
	return out
}

// copyBatch copies msgs for binding b of tp into q and returns the per-message errors.
func (ts *topicSuite) copyBatch(q engine.Queue, tp engine.Topic, b ids.ID, msgs []engine.CopyMessage) []error {
	ts.t.Helper()
	errs, err := ts.tp.Copy(ts.ctx, q, engine.CopyBatch{Topic: tp.ID, Binding: b, Messages: msgs})
	if err != nil {
		ts.t.Fatalf("Copy: %v", err)
	}
	if len(errs) != len(msgs) {
		ts.t.Fatalf("Copy answered %d results for %d messages", len(errs), len(msgs))
	}
	return errs
}

// copyAll copies and wants every message stored (now or earlier).
func (ts *topicSuite) copyAll(q engine.Queue, tp engine.Topic, b ids.ID, msgs []engine.CopyMessage) {
	ts.t.Helper()
	for i, err := range ts.copyBatch(q, tp, b, msgs) {
		if err != nil {
			ts.t.Fatalf("Copy of message %d (sequence %d): %v", i, msgs[i].Sequence, err)
		}
	}
}

func (ts *topicSuite) bind(tp engine.Topic, b engine.Binding) {
	ts.t.Helper()
	wantNil(ts.t, "Bind", ts.tp.Bind(ts.ctx, tp, b))
}

func (ts *topicSuite) bindings(tp engine.Topic) map[ids.ID]engine.Binding {
	ts.t.Helper()
	bs, err := ts.tp.Bindings(ts.ctx, tp)
	if err != nil {
		ts.t.Fatalf("Bindings: %v", err)
	}
	out := map[ids.ID]engine.Binding{}
	for _, b := range bs {
		if _, dup := out[b.ID]; dup {
			ts.t.Fatalf("Bindings lists %s twice", b.ID)
		}
		out[b.ID] = b
	}
	return out
}

func testTopicBindings(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	q1, q2, b1, b2 := ids.New(), ids.New(), ids.New(), ids.New()
	f := `{"attributes":{"x":"1"}}`
	ts.bind(tp, engine.Binding{ID: b1, Queue: q1})
	ts.bind(tp, engine.Binding{ID: b2, Queue: q2, Filter: f, Sequence: 5})
	bs := ts.bindings(tp)
	if len(bs) != 2 || bs[b1].Queue != q1 || bs[b1].Filter != "" || bs[b1].Sequence != 0 ||
		bs[b2].Queue != q2 || bs[b2].Filter != f || bs[b2].Sequence != 5 || bs[b2].Copied != 0 || bs[b2].LastError != "" {
		t.Fatalf("bindings %+v", bs)
	}
	wantNil(t, "SetFilter", ts.tp.SetFilter(ts.ctx, tp, b1, f))
	if got := ts.bindings(tp)[b1].Filter; got != f {
		t.Fatalf("filter %q after SetFilter, want %q", got, f)
	}
	wantNil(t, "SetFilter to none", ts.tp.SetFilter(ts.ctx, tp, b2, ""))
	if got := ts.bindings(tp)[b2].Filter; got != "" {
		t.Fatalf("filter %q after removing it", got)
	}
	errAt := ts.clk.Now()
	advance(t, ts, tp, engine.Advance{Binding: b1, Through: 3, Copied: 2, Failed: 1, LastError: "quota"},
		engine.Advance{Binding: ids.New(), Through: 9, Copied: 9})
	ts.clk.Advance(time.Minute)
	advance(t, ts, tp, engine.Advance{Binding: b1, Through: 4, Copied: 1})
	// Binding again with the same id changes nothing (a retried create).
	ts.bind(tp, engine.Binding{ID: b1, Queue: q1})
	bs = ts.bindings(tp)
	got := bs[b1]
	if len(bs) != 2 || got.Sequence != 4 || got.Copied != 3 || got.Failed != 1 || got.LastError != "quota" || got.Filter != f {
		t.Fatalf("binding %+v after two advances, want sequence 4, copied 3, failed 1, last error quota", got)
	}
	wantTime(t, "LastErrorAt", got.LastErrorAt, errAt)
	if bs[b2].Sequence != 5 || bs[b2].Copied != 0 {
		t.Fatalf("the other binding moved: %+v", bs[b2])
	}
	wantNil(t, "Unbind", ts.tp.Unbind(ts.ctx, tp, b2, q2))
	if bs := ts.bindings(tp); len(bs) != 1 || bs[b1].ID != b1 {
		t.Fatalf("bindings after an unbind: %+v", bs)
	}
	wantNil(t, "Unbind of a binding that is gone", ts.tp.Unbind(ts.ctx, tp, b2, q2))
}

func testTopicCopyStandard(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	q := ts.projectQueue()
	attrs := map[string]string{"kind": "order"}
	res := ts.publish(tp, engine.PublishMessage{Message: engine.Message{Body: "one", Attributes: attrs}},
		engine.PublishMessage{Message: engine.Message{Body: "two"}}, engine.PublishMessage{Message: engine.Message{Body: "three"}})
	b := ids.New()
	ts.bind(tp, engine.Binding{ID: b, Queue: q.ID})
	batch := copies(false, ts.readLog(tp, 1, 10)...)
	ts.copyAll(q, tp, b, batch)
	ts.wantCounts(q, 3, 0, 0)
	if got := ts.browseAll(q, engine.StateVisible, 10, ""); !slices.Equal(sorted(got), []string{"one", "three", "two"}) {
		t.Fatalf("browse of the copies: %v", got)
	}
	ts.copyAll(q, tp, b, batch) // a batch copied again (a crash before AdvanceBindings)
	ts.copyAll(q, tp, b, batch[1:2])
	ts.wantCounts(q, 3, 0, 0)
	got := map[ids.ID]engine.Received{}
	for _, m := range ts.receive(q, engine.MaxBatch, time.Minute) {
		got[m.MessageID] = m
	}
	for i, r := range res {
		m, ok := got[r.MessageID]
		if !ok || m.Body != batch[i].Message.Body {
			t.Fatalf("published message %d (%s) not received with its id: %+v", i, r.MessageID, got)
		}
	}
	if len(got) != 3 || !maps.Equal(got[res[0].MessageID].Attributes, attrs) {
		t.Fatalf("received %+v", got)
	}
	ts.copyAll(q, tp, b, batch)
	ts.wantCounts(q, 0, 3, 0)
	for _, m := range got {
		wantNil(t, "ack", ts.ack(q, m.Delivery)[0])
	}
	ts.copyAll(q, tp, b, batch) // acknowledged copies are not stored again either
	ts.wantCounts(q, 0, 0, 0)
	// Unbind takes the binding's mark out of the queue: nothing of it is left there (a new
	// binding of the same id, which the API never makes, would copy afresh).
	wantNil(t, "Unbind", ts.tp.Unbind(ts.ctx, tp, b, q.ID))
	ts.bind(tp, engine.Binding{ID: b, Queue: q.ID})
	ts.copyAll(q, tp, b, batch[:1])
	ts.wantCounts(q, 1, 0, 0)
}

// testTopicCopyOverlap: overlapping batches store each entry once; another binding into the
// same queue has a mark of its own.
func testTopicCopyOverlap(t *testing.T, ts *topicSuite) {
	tp, tp2 := ts.topic(), ts.topic()
	q := ts.projectQueue()
	ts.pub(tp, "1", "2", "3", "4", "5", "6", "7", "8")
	es := ts.readLog(tp, 1, 10)
	b, b2 := ids.New(), ids.New()
	ts.copyAll(q, tp, b, copies(false, es[0:5]...))
	ts.copyAll(q, tp, b, copies(false, es[2:8]...))
	ts.wantCounts(q, 8, 0, 0)
	ts.pub(tp2, "other 1", "other 2")
	ts.copyAll(q, tp2, b2, copies(false, ts.readLog(tp2, 1, 10)...))
	ts.wantCounts(q, 10, 0, 0)
	seen := map[ids.ID]string{}
	for _, m := range ts.receive(q, engine.MaxBatch, time.Minute) {
		if _, dup := seen[m.MessageID]; dup {
			t.Fatalf("message %s received twice", m.MessageID)
		}
		seen[m.MessageID] = m.Body
	}
	for _, e := range es {
		if seen[e.MessageID] != e.Body {
			t.Fatalf("entry %d (%s) not received: %v", e.Sequence, e.MessageID, seen)
		}
	}
}

func testTopicCopyFIFO(t *testing.T, ts *topicSuite) {
	tp := ts.topic(topicFIFO)
	q := ts.projectQueue(fifo)
	m := func(group, body string) engine.PublishMessage {
		return engine.PublishMessage{Message: engine.Message{Body: body, GroupID: group}}
	}
	ts.publish(tp, m("g1", "a1"), m("g1", "a2"), m("g2", "b1"))
	ts.publish(tp, engine.PublishMessage{Message: engine.Message{Body: "a3", GroupID: "g1", DedupID: "d-a3"}}, m("g1", "a4"))
	es := ts.readLog(tp, 1, 10)
	b := ids.New()
	ts.copyAll(q, tp, b, copies(true, es[:3]...))
	ts.copyAll(q, tp, b, copies(true, es...))
	ts.copyAll(q, tp, b, copies(true, es...))
	ts.wantCounts(q, 5, 0, 0)
	byGroup := map[string][]string{}
	gotIDs := map[string]ids.ID{}
	for range 5 {
		ms := ts.receive(q, engine.MaxBatch, time.Minute)
		if len(ms) == 0 {
			break
		}
		for _, r := range ms {
			byGroup[r.GroupID] = append(byGroup[r.GroupID], r.Body)
			gotIDs[r.Body] = r.MessageID
			wantNil(t, "ack", ts.ack(q, r.Delivery)[0])
		}
	}
	if !slices.Equal(byGroup["g1"], []string{"a1", "a2", "a3", "a4"}) || !slices.Equal(byGroup["g2"], []string{"b1"}) {
		t.Fatalf("received by group %v, want g1 a1..a4 in order and g2 b1", byGroup)
	}
	for _, e := range es {
		if gotIDs[e.Body] != e.MessageID {
			t.Fatalf("%s received as %s, published as %s", e.Body, gotIDs[e.Body], e.MessageID)
		}
	}
	ts.copyAll(q, tp, b, copies(true, es...))
	ts.receiveNone(q)

	// A dedup id the queue's window holds for another message refuses the copy.
	ts.sendResults(q, engine.Message{Body: "direct", GroupID: "g3", DedupID: "taken"})
	res := ts.publish(tp, engine.PublishMessage{Message: engine.Message{Body: "clash", GroupID: "g3", DedupID: "taken"}})
	errs := ts.copyBatch(q, tp, b, copies(true, ts.readLog(tp, res[0].Sequence, 1)...))
	wantRefusal(t, "a copy whose dedup id the queue holds for another message", errs[0], engine.ErrDedupTaken)
	var dt *engine.DedupTaken
	if !errors.As(errs[0], &dt) || dt.DedupID != "taken" {
		t.Fatalf("a copy whose dedup id the queue holds for another message: %v, want an *engine.DedupTaken naming \"taken\"", errs[0])
	}
	ts.wantCounts(q, 1, 0, 0)
}

// testTopicCopyQuota: a copy past the queue's project's byte quota is refused message by
// message; the others are stored.
func testTopicCopyQuota(t *testing.T, ts *topicSuite) {
	q := ts.projectQueue(func(q *engine.Queue) { q.MaxStoredBytes = 10 })
	ts.send(q, "12345678")
	tp := ts.topic(func(t *engine.Topic) { t.Project = ids.New() }) // its log's bytes are not q's project's
	ts.pub(tp, "aaaaa", "bbbbbb", "cc")
	b := ids.New()
	errs := ts.copyBatch(q, tp, b, copies(false, ts.readLog(tp, 1, 10)...))
	wantQuota(t, errs[0], 10) // the copy of 5 bytes
	wantQuota(t, errs[1], 10) // the copy of 6 bytes
	wantNil(t, "copy of 2 bytes within the quota", errs[2])
	ts.wantCounts(q, 2, 0, 0)
	ts.storedBytes("after a partly refused copy", 10)
}

func testTopicStoredBytes(t *testing.T, ts *topicSuite) {
	tp := ts.topic(topicRetention(time.Hour))
	ts.storedBytes("a new topic", 0)
	ts.publish(tp, engine.PublishMessage{Message: engine.Message{Body: "aaa"}},
		engine.PublishMessage{Message: engine.Message{Body: "b", Attributes: map[string]string{"k": "vv"}}})
	ts.storedBytes("a publish", 7)
	ts.publish(tp, keyed("key", `{"a":1}`, engine.MergeReplace, nil))
	ts.storedBytes("a keyed publish: its entry and the key's state", 21)
	ts.publish(tp, keyed("key", `{}`, engine.MergeReplace, nil))
	ts.storedBytes("a replace of the state", 18)
	if b := ts.bounds(tp); b.Bytes != 18 {
		t.Fatalf("Bounds.Bytes = %d, want 18", b.Bytes)
	}
	q := ts.projectQueue()
	ts.copyAll(q, tp, ids.New(), copies(false, ts.readLog(tp, 1, 2)...))
	ts.storedBytes("copies into a queue", 25)
	ts.clk.Advance(time.Hour + time.Second)
	ts.trim(tp)
	ts.storedBytes("a trim of every entry, the state kept", 9)
	wantNil(t, "DeleteTopic", ts.tp.DeleteTopic(ts.ctx, tp))
	ts.storedBytes("the topic deleted, its copies kept", 7)
}

func testTopicPublishQuota(t *testing.T, ts *topicSuite) {
	tp := ts.topic(func(t *engine.Topic) { t.MaxStoredBytes = 10 })
	q := ts.projectQueue()
	ts.send(q, "123") // the project's queues count too
	ts.pub(tp, "45678")
	_, err := ts.tp.Publish(ts.ctx, tp, []engine.PublishMessage{{Message: engine.Message{Body: "a"}}, {Message: engine.Message{Body: "bcd"}}})
	wantQuota(t, err, 10)
	ts.wantBounds("a refused publish", tp, 1, 1)
	ts.storedBytes("a refused publish", 8)
	ts.pub(tp, "ab")
	ts.storedBytes("a publish up to the limit", 10)
}

func testTopicLease(t *testing.T, ts *topicSuite) {
	topic, other := ids.New(), ids.New()
	lease := func(id ids.ID, owner string, want bool) {
		t.Helper()
		ok, err := ts.tp.LeaseTopic(ts.ctx, id, owner, 10*time.Second)
		wantNil(t, "LeaseTopic", err)
		if ok != want {
			t.Fatalf("LeaseTopic by %s = %v, want %v", owner, ok, want)
		}
	}
	lease(topic, "a", true)
	lease(topic, "b", false)
	lease(other, "b", true) // leases are per topic
	ts.clk.Advance(5 * time.Second)
	lease(topic, "a", true) // renewed: until 15 s
	ts.clk.Advance(6 * time.Second)
	lease(topic, "b", false)
	ts.clk.Advance(5 * time.Second)
	lease(topic, "b", true) // a's lease ended: taken over
	lease(topic, "a", false)
	wantNil(t, "ReleaseTopic by a non-owner", ts.tp.ReleaseTopic(ts.ctx, topic, "a"))
	lease(topic, "a", false)
	wantNil(t, "ReleaseTopic", ts.tp.ReleaseTopic(ts.ctx, topic, "b"))
	lease(topic, "a", true)
}

func testTopicActive(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	active := func(want bool, what string) {
		t.Helper()
		list, err := ts.tp.ActiveTopics(ts.ctx)
		wantNil(t, "ActiveTopics", err)
		if got := slices.Contains(list, tp.ID); got != want {
			t.Fatalf("%s: the topic is active %v, want %v", what, got, want)
		}
	}
	active(false, "a new topic")
	ts.pub(tp, "1", "2")
	active(true, "after a publish")
	wantNil(t, "IdleTopic", ts.tp.IdleTopic(ts.ctx, tp.ID, 2, time.Time{}))
	active(false, "idle once caught up")
	ts.pub(tp, "3")
	active(true, "a publish after idle")
	wantNil(t, "IdleTopic", ts.tp.IdleTopic(ts.ctx, tp.ID, 2, time.Time{}))
	active(true, "idle through 2 with 3 published")
	wantNil(t, "IdleTopic", ts.tp.IdleTopic(ts.ctx, tp.ID, 3, time.Time{}))
	active(false, "idle through 3")
	wantNil(t, "WakeTopic", ts.tp.WakeTopic(ts.ctx, tp.ID))
	active(true, "woken")
	wantNil(t, "IdleTopic", ts.tp.IdleTopic(ts.ctx, tp.ID, 3, time.Time{}))
	active(false, "idle again after the wake")
}

// An idle topic with a wake time comes back in ActiveTopics once the time has passed (the
// fan-out trims it then), and stays listed until it is idled again.
func testTopicWakeAt(t *testing.T, ts *topicSuite) {
	tp, other := ts.topic(), ts.topic()
	active := func(id ids.ID, want bool, what string) {
		t.Helper()
		list, err := ts.tp.ActiveTopics(ts.ctx)
		wantNil(t, "ActiveTopics", err)
		if got := slices.Contains(list, id); got != want {
			t.Fatalf("%s: the topic is active %v, want %v", what, got, want)
		}
		seen := map[ids.ID]bool{}
		for _, id := range list {
			if seen[id] {
				t.Fatalf("%s: ActiveTopics lists %s twice", what, id)
			}
			seen[id] = true
		}
	}
	ts.pub(tp, "1")
	ts.pub(other, "1")
	wake := ts.clk.Now().Add(time.Hour)
	wantNil(t, "IdleTopic", ts.tp.IdleTopic(ts.ctx, tp.ID, 1, wake))
	wantNil(t, "IdleTopic", ts.tp.IdleTopic(ts.ctx, other.ID, 1, time.Time{}))
	active(tp.ID, false, "idle with a wake time an hour away")
	ts.clk.Advance(time.Hour - time.Second)
	active(tp.ID, false, "a second before its wake time")
	ts.clk.Advance(time.Second)
	active(tp.ID, true, "at its wake time")
	active(other.ID, false, "idle without a wake time, an hour later")
	ts.clk.Advance(time.Minute)
	active(tp.ID, true, "past its wake time, not idled again")
	wantNil(t, "WakeTopic", ts.tp.WakeTopic(ts.ctx, tp.ID))
	active(tp.ID, true, "due and woken (listed once)")

	// Idled again: the new wake time replaces the old; a zero one clears it.
	wantNil(t, "IdleTopic", ts.tp.IdleTopic(ts.ctx, tp.ID, 1, ts.clk.Now().Add(time.Minute)))
	active(tp.ID, false, "idled again with the next wake time")
	wantNil(t, "IdleTopic", ts.tp.IdleTopic(ts.ctx, tp.ID, 1, time.Time{}))
	ts.clk.Advance(2 * time.Minute)
	active(tp.ID, false, "idled without a wake time")

	// A publish lists the topic whatever its wake time; an idle that a publish raced (last
	// behind) changes nothing.
	wantNil(t, "IdleTopic", ts.tp.IdleTopic(ts.ctx, tp.ID, 1, ts.clk.Now().Add(time.Hour)))
	ts.pub(tp, "2")
	active(tp.ID, true, "published to while waiting for its wake time")
	wantNil(t, "IdleTopic", ts.tp.IdleTopic(ts.ctx, tp.ID, 1, time.Time{}))
	active(tp.ID, true, "idle through 1 with 2 published")
	wantNil(t, "IdleTopic", ts.tp.IdleTopic(ts.ctx, tp.ID, 2, ts.clk.Now().Add(time.Minute)))
	active(tp.ID, false, "idle through 2")
	ts.clk.Advance(time.Minute)
	active(tp.ID, true, "at the wake time set by the last idle")

	wantNil(t, "DeleteTopic", ts.tp.DeleteTopic(ts.ctx, tp))
	active(tp.ID, false, "deleted")
}

func testTopicWatch(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	ch, cancel := ts.tp.WatchTopic(tp.ID)
	ch2, cancel2 := ts.tp.WatchTopic(tp.ID)
	defer cancel2()
	ts.pub(tp, "wake")
	waitSignal(t, ch, "a publish")
	waitSignal(t, ch2, "a publish (second watcher)")
	cancel()
	cancel() // idempotent
	for range 3 {
		ts.pub(tp, "more") // signals coalesce and never block the publish
	}
	waitSignal(t, ch2, "publishes")
}

func testTopicDelete(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	ts.publish(tp, keyed("k", `{"a":1}`, engine.MergeReplace, nil), engine.PublishMessage{Message: engine.Message{Body: "plain"}})
	ts.bind(tp, engine.Binding{ID: ids.New(), Queue: ids.New()})
	wantNil(t, "DeleteTopic", ts.tp.DeleteTopic(ts.ctx, tp))
	ts.storedBytes("a deleted topic", 0)
	gone := func(what string, n int, err error) {
		t.Helper()
		if err != nil && apierr.CodeOf(err) != apierr.NotFound {
			t.Fatalf("%s of a deleted topic: %v", what, err)
		}
		if n != 0 {
			t.Fatalf("%s of a deleted topic holds %d", what, n)
		}
	}
	es, err := ts.tp.ReadLog(ts.ctx, tp, 1, 10)
	gone("ReadLog", len(es), err)
	bs, err := ts.tp.Bindings(ts.ctx, tp)
	gone("Bindings", len(bs), err)
	st, _, err := ts.tp.StatePage(ts.ctx, tp, 10, "")
	gone("StatePage", len(st), err)
	_, err = ts.tp.State(ts.ctx, tp, "k")
	wantIs(t, "State of a deleted topic", err, engine.ErrNoState)
	if b, err := ts.tp.Bounds(ts.ctx, tp); err == nil && b.Bytes != 0 {
		t.Fatalf("Bounds of a deleted topic: %+v", b)
	}
}

// testTopicRebindHeld: a queue unbound and bound again (a new binding id, as the API makes)
// from an earlier sequence, while it still holds copies of the first binding: what it holds
// is not stored twice (a queue holds a message id once), and the rest is copied.
func testTopicRebindHeld(t *testing.T, ts *topicSuite) {
	tp := ts.topic()
	q := ts.projectQueue()
	ts.pub(tp, "one", "two")
	b1 := ids.New()
	ts.bind(tp, engine.Binding{ID: b1, Queue: q.ID})
	ts.copyAll(q, tp, b1, copies(false, ts.readLog(tp, 1, 10)...))
	wantNil(t, "Unbind", ts.tp.Unbind(ts.ctx, tp, b1, q.ID))
	ts.pub(tp, "three")
	b2 := ids.New()
	ts.bind(tp, engine.Binding{ID: b2, Queue: q.ID})
	ts.copyAll(q, tp, b2, copies(false, ts.readLog(tp, 1, 10)...))
	ts.wantCounts(q, 3, 0, 0)
	got := ts.receive(q, engine.MaxBatch, time.Minute)
	seen := map[ids.ID]bool{}
	for _, m := range got {
		if seen[m.MessageID] {
			t.Fatalf("message %s (%q) received twice", m.MessageID, m.Body)
		}
		seen[m.MessageID] = true
	}
	if len(got) != 3 {
		t.Fatalf("received %d messages, want 3", len(got))
	}
}
