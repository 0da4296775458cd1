package fanout_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

func TestIntegrationBackfillDoesNotHoldBackTheOthers(t *testing.T) {
	onEngines(t, testBackfillDoesNotHoldBackTheOthers)
}

// A binding created from=earliest on a long log copies it a batch per round; the bindings
// already caught up get a new publish in the next round, not once the new one has caught up.
func testBackfillDoesNotHoldBackTheOthers(t *testing.T, mk engineMaker) {
	w := newWorld(t, mk, "standard")
	ctx := t.Context()
	const n = 3000
	for i := 0; i < n; i += 10 {
		msgs := make([]engine.PublishMessage, 10)
		for j := range msgs {
			msgs[j] = engine.PublishMessage{Message: engine.Message{Body: fmt.Sprint(i + j)}}
		}
		w.publish(t, msgs...)
	}
	bs, err := w.eng.Bindings(ctx, w.engineTopic())
	must(t, err)
	var as []engine.Advance
	current := map[ids.ID]bool{}
	for _, b := range bs {
		as, current[b.ID] = append(as, engine.Advance{Binding: b.ID, Through: n}), true
	}
	must(t, w.eng.AdvanceBindings(ctx, w.engineTopic(), as)) // caught up before the new binding
	now := time.Now()
	q := meta.Queue{ID: ids.New(), ProjectID: w.topic.ProjectID, Name: "backfill", Type: "standard", CreatedAt: now,
		VisibilityTimeoutSeconds: 30, RetentionSeconds: 3600}
	must(t, w.store.CreateQueue(ctx, q))
	must(t, w.eng.CreateQueue(ctx, q.Engine(nil)))
	nb := meta.Binding{ID: ids.New(), ProjectID: q.ProjectID, QueueID: q.ID, TopicID: w.topic.ID, From: "earliest", StartSequence: 1, CreatedAt: now}
	must(t, w.eng.Bind(ctx, w.engineTopic(), engine.Binding{ID: nb.ID, Queue: q.ID}))
	must(t, w.store.CreateBinding(ctx, nb))
	w.publish(t, engine.PublishMessage{Message: engine.Message{Body: "new"}})
	run(t, w.runner())

	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		bs, err := w.eng.Bindings(ctx, w.engineTopic())
		must(t, err)
		done, backfill := true, uint64(0)
		for _, b := range bs {
			if current[b.ID] {
				done = done && b.Sequence >= n+1
			} else {
				backfill = b.Sequence
			}
		}
		if done {
			if backfill >= n-2*fanoutReadLimit {
				t.Fatalf("the caught-up bindings got the publish only once the new binding was at %d of %d", backfill, n)
			}
			return
		}
		select {
		case <-w.eng.advanced:
		case <-deadline.C:
			t.Fatalf("bindings %+v did not reach %d", bs, n+1)
		}
	}
}

const fanoutReadLimit = 200
