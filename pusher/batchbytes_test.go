package pusher_test

import (
	"strings"
	"testing"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pusher"
)

// TestBatchBytes: a push carries at most pusher.MaxBatchBytes (5 MiB) of messages
// (docs/api-tour.md), whatever its batchSize: on a queue of 1 MiB messages a receive takes no more
// than fit, so twelve near-1 MiB messages go as 5 + 5 + 2, each received once; on a queue whose
// maxMessageBytes was lowered under the messages it holds, a batch over the bound is cut and
// the rest given back. Every message is pushed.
func TestBatchBytes(t *testing.T) {
	e := newEnv(t)
	body := strings.Repeat("m", engine.MaxMessageBytes) // 1 MiB each: five fill a push exactly
	const n = 12
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = body
	}
	roomy := e.queue("standard", func(q *meta.Queue) { q.MaxMessageBytes = engine.MaxMessageBytes })
	lowered := e.queue("standard", func(q *meta.Queue) { q.MaxMessageBytes = engine.MaxMessageBytes })
	e.send(roomy, bodies...)
	e.send(lowered, bodies...)
	cur, err := e.store.GetQueue(t.Context(), lowered.ProjectID, lowered.ID)
	if err != nil {
		t.Fatal(err)
	}
	cur.MaxMessageBytes = engine.MinMaxMessageBytes
	if _, err := e.store.UpdateQueue(t.Context(), cur); err != nil {
		t.Fatal(err)
	}
	for _, q := range []meta.Queue{roomy, lowered} {
		ep := newEndpoint(t, false, status(200))
		e.subscribe(q, ep.URL, func(s *meta.Subscription) { s.BatchSize, s.MaxInFlight = 100, 1 })
		if q.ID == roomy.ID {
			e.pusher(nil)
		}
		acked, batches := map[string]bool{}, 0
		for len(acked) < n {
			p := ep.next(t)
			batches++
			size := 0
			for _, m := range p.body.Messages {
				size += len(m.Body)
				acked[m.MessageID] = true
				if q.ID == roomy.ID && m.ReceiveCount != 1 {
					t.Fatalf("roomy: message %s pushed with receiveCount %d: a receive took more than the batch could carry", m.MessageID, m.ReceiveCount)
				}
			}
			if size > pusher.MaxBatchBytes || len(p.body.Messages) == 0 {
				t.Fatalf("queue %s: a push of %d messages, %d bytes; the bound is %d", q.Name, len(p.body.Messages), size, pusher.MaxBatchBytes)
			}
		}
		if batches < 3 {
			t.Fatalf("queue %s: %d messages in %d pushes", q.Name, n, batches)
		}
	}
}
