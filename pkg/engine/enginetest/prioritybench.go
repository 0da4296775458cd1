package enginetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// BenchPriorityScale measures receive latency on a standard queue holding n visible messages
// spread evenly over the ten priorities (docs/delivery-options.md#priority), for each n of sizes:
// one op receives a batch of 10, acknowledges it and sends 10 new ones at random priorities, so the
// backlog stays n. A receive reads only the highest priority's messages, so the figure should stay
// flat as n grows. levels=1 is the same with every message at priority 0, for comparison.
func BenchPriorityScale(b *testing.B, h BenchHarness, sizes ...int) {
	for _, n := range sizes {
		for _, levels := range []int{engine.MaxPriority + 1, 1} {
			b.Run(fmt.Sprintf("queued=%d/levels=%d", n, levels), func(b *testing.B) { benchPriority(b, h, n, levels) })
		}
	}
}

func benchPriority(b *testing.B, h BenchHarness, n, levels int) {
	e, _ := h.New(b)
	ctx := context.Background()
	q := engine.Queue{ID: ids.New(), Type: engine.Standard, VisibilityTimeout: 30 * time.Second, Retention: 4 * 24 * time.Hour}
	if err := e.CreateQueue(ctx, q); err != nil {
		b.Fatal(err)
	}
	batch := func(first int) []engine.Message {
		msgs := make([]engine.Message, engine.MaxBatch)
		for j := range msgs {
			msgs[j] = engine.Message{Body: "prioritised message body", Priority: (first + j) % levels}
		}
		return msgs
	}
	for i := 0; i < n; i += engine.MaxBatch {
		if _, err := e.Send(ctx, q, batch(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("op=receive-ack-send", func(b *testing.B) {
		var recv time.Duration // the receives alone, reported as receive-ns/op
		for b.Loop() {
			t0 := time.Now()
			res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: engine.MaxBatch, Visibility: time.Minute})
			recv += time.Since(t0)
			if err != nil || len(res.Messages) != engine.MaxBatch {
				b.Fatalf("receive: %d messages, %v", len(res.Messages), err)
			}
			ds := make([]engine.Delivery, len(res.Messages))
			for i, m := range res.Messages {
				ds[i] = m.Delivery
			}
			if _, err := e.Ack(ctx, q, ds); err != nil {
				b.Fatal(err)
			}
			if _, err := e.Send(ctx, q, batch(rand.IntN(levels))); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(recv.Nanoseconds())/float64(b.N), "receive-ns/op")
	})
}
