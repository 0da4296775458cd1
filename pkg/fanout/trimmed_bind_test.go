package fanout_test

import (
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

func TestIntegrationBindingBehindAnEmptyLog(t *testing.T) {
	onClockedEngines(t, testBindingBehindAnEmptyLog)
}

// A binding created from a sequence the log no longer holds (from=1 on a topic whose log was
// trimmed empty) has nothing to copy: its cursor moves to the log's end and the topic is let
// go, rather than the binding showing a lag forever and the topic being held until the next
// publish.
func testBindingBehindAnEmptyLog(t *testing.T, mk clockedMaker) {
	clk := clock.NewFake(time.Now().Truncate(time.Millisecond))
	w := newWorld(t, func(t *testing.T) topicEngine { return mk(t, clk) }, "standard")
	r := w.runner()
	r.Clock, r.IdleAfter = clk, 50*time.Millisecond
	run(t, r)
	body := engine.PublishMessage{Message: engine.Message{Body: strings.Repeat("x", 100)}}
	res := w.publish(t, body, body)
	w.awaitCursors(t, res[1].Sequence)
	w.awaitIdle(t)
	clk.Advance(61 * time.Minute)
	w.awaitTrimmedTo(t, 3)
	w.awaitIdle(t)

	ctx, now := t.Context(), time.Now()
	q := meta.Queue{ID: ids.New(), ProjectID: w.topic.ProjectID, Name: "late", Type: "standard", CreatedAt: now,
		VisibilityTimeoutSeconds: 30, RetentionSeconds: 3600}
	must(t, w.store.CreateQueue(ctx, q))
	must(t, w.eng.CreateQueue(ctx, q.Engine(nil)))
	b := meta.Binding{ID: ids.New(), ProjectID: q.ProjectID, QueueID: q.ID, TopicID: w.topic.ID, From: "1", StartSequence: 1, CreatedAt: now}
	must(t, w.eng.Bind(ctx, w.engineTopic(), engine.Binding{ID: b.ID, Queue: q.ID}))
	must(t, w.store.CreateBinding(ctx, b))
	must(t, w.eng.WakeTopic(ctx, w.topic.ID)) // taken up (as a retention PATCH does)
	w.awaitCursors(t, res[1].Sequence)
	w.awaitIdle(t)
	if got := w.receiveAll(t, q); len(got) != 0 {
		t.Fatalf("the late queue received %d messages from an empty log", len(got))
	}
}
