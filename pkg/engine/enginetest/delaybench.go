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

// BenchDelayScale measures receives on a standard queue holding n messages delayed at random
// over 14 days (long delays: docs/lifecycle.md#long-delays-and-deliverat), for each n of sizes:
// "receive-empty" is a receive that finds none visible (it answers when the next one is due),
// "send-receive-ack" one visible message's round trip beside the delayed ones. The delay index is
// the partition's ready set (a sorted set on Redis, a heap embedded): both should stay flat as n
// grows.
func BenchDelayScale(b *testing.B, h BenchHarness, sizes ...int) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("delayed=%d", n), func(b *testing.B) {
			e, _ := h.New(b)
			ctx := context.Background()
			q := engine.Queue{ID: ids.New(), Type: engine.Standard, VisibilityTimeout: 30 * time.Second, Retention: 14 * 24 * time.Hour}
			if err := e.CreateQueue(ctx, q); err != nil {
				b.Fatal(err)
			}
			span := int64(14 * 24 * time.Hour)
			for i := 0; i < n; i += engine.MaxBatch {
				msgs := make([]engine.Message, engine.MaxBatch)
				for j := range msgs {
					d := time.Hour + time.Duration(rand.Int64N(span-int64(time.Hour))) // none due while the benchmark runs
					msgs[j] = engine.Message{Body: "delayed message body", Delay: &d}
				}
				if _, err := e.Send(ctx, q, msgs); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("op=receive-empty", func(b *testing.B) {
				for b.Loop() {
					res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: engine.MaxBatch, Visibility: time.Minute})
					if err != nil || len(res.Messages) != 0 || res.NextVisibleAt.IsZero() {
						b.Fatalf("receive: %d messages, next %v, %v", len(res.Messages), res.NextVisibleAt, err)
					}
				}
			})
			b.Run("op=send-receive-ack", func(b *testing.B) {
				for b.Loop() {
					if _, err := e.Send(ctx, q, []engine.Message{{Body: "now"}}); err != nil {
						b.Fatal(err)
					}
					res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})
					if err != nil || len(res.Messages) != 1 {
						b.Fatalf("receive: %d, %v", len(res.Messages), err)
					}
					if _, err := e.Ack(ctx, q, []engine.Delivery{res.Messages[0].Delivery}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
