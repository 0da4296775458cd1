package enginetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// BenchHarness makes engines for the shared benchmarks.
type BenchHarness struct {
	// New returns an engine for one benchmark and the clock it reads (the real clock is fine).
	New func(b *testing.B) (engine.Engine, clock.Clock)
}

// benchBody is the body size the benchmarks send.
const benchBody = 1024

// Bench runs the shared benchmarks, named op=…/batch=… (plus conc=… for parallel ones), with
// 1 KiB bodies. SetBytes counts body bytes; msgs/s is reported too.
func Bench(b *testing.B, h BenchHarness) {
	for _, batch := range []int{1, engine.MaxBatch} {
		b.Run(fmt.Sprintf("op=send/batch=%d", batch), func(b *testing.B) { benchSend(b, h, batch, 1) })
		b.Run(fmt.Sprintf("op=receive-ack/batch=%d", batch), func(b *testing.B) { benchReceiveAck(b, h, batch) })
	}
	b.Run(fmt.Sprintf("op=send/batch=%d/conc=8", engine.MaxBatch), func(b *testing.B) { benchSend(b, h, engine.MaxBatch, 8) })
	// Fifo: sends spread over 100 groups; receives take a batch from a group.
	b.Run(fmt.Sprintf("op=fifo-send/batch=%d", engine.MaxBatch), func(b *testing.B) { benchFIFO(b, h, false) })
	b.Run(fmt.Sprintf("op=fifo-receive-ack/batch=%d", engine.MaxBatch), func(b *testing.B) { benchFIFO(b, h, true) })
}

// benchFIFO sends batches of 10 messages of one group each (groups rotate over 100), or
// receives batches of up to 10 and acknowledges them.
func benchFIFO(b *testing.B, h BenchHarness, receive bool) {
	e, _ := h.New(b)
	ctx := context.Background()
	q := engine.Queue{ID: ids.New(), Type: engine.FIFO, VisibilityTimeout: time.Minute, Retention: time.Hour}
	if err := e.CreateQueue(ctx, q); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.DeleteQueue(context.Background(), q.ID) })
	msgs := benchMessages(engine.MaxBatch)
	g := 0
	send := func() {
		for i := range msgs {
			msgs[i].GroupID = fmt.Sprintf("group-%d", g%100)
		}
		g++
		if _, err := e.Send(ctx, q, msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	if !receive {
		b.SetBytes(int64(engine.MaxBatch * benchBody))
		for b.Loop() {
			send()
		}
		b.ReportMetric(float64(b.N*engine.MaxBatch)/b.Elapsed().Seconds(), "msgs/s")
		return
	}
	backlog, got := 0, 0
	for b.Loop() {
		if backlog < engine.MaxBatch*100 {
			b.StopTimer()
			for range 200 {
				send()
			}
			backlog += 200 * engine.MaxBatch
			b.StartTimer()
		}
		res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: engine.MaxBatch, Visibility: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Messages) == 0 {
			b.Fatalf("received nothing with a backlog of %d", backlog)
		}
		backlog -= len(res.Messages)
		got += len(res.Messages)
		ds := make([]engine.Delivery, len(res.Messages))
		for i, m := range res.Messages {
			ds[i] = m.Delivery
		}
		if _, err := e.Ack(ctx, q, ds); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(got / max(b.N, 1) * benchBody))
	b.ReportMetric(float64(got)/b.Elapsed().Seconds(), "msgs/s")
}

func benchQueue(b *testing.B, e engine.Engine) engine.Queue {
	q := engine.Queue{ID: ids.New(), Type: engine.Standard, VisibilityTimeout: time.Minute, Retention: time.Hour}
	if err := e.CreateQueue(context.Background(), q); err != nil {
		b.Fatal(err)
	}
	return q
}

func benchMessages(n int) []engine.Message {
	body := strings.Repeat("x", benchBody)
	msgs := make([]engine.Message, n)
	for i := range msgs {
		msgs[i] = engine.Message{Body: body, Attributes: map[string]string{"k": "v"}}
	}
	return msgs
}

func benchSend(b *testing.B, h BenchHarness, batch, conc int) {
	e, _ := h.New(b)
	ctx := context.Background()
	q := benchQueue(b, e)
	b.Cleanup(func() { _ = e.DeleteQueue(context.Background(), q.ID) })
	msgs := benchMessages(batch)
	b.SetBytes(int64(batch * benchBody))
	b.ReportAllocs()
	if conc > 1 {
		b.SetParallelism(conc)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := e.Send(ctx, q, msgs); err != nil {
					b.Error(err)
					return
				}
			}
		})
	} else {
		for b.Loop() {
			if _, err := e.Send(ctx, q, msgs); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
}

func benchReceiveAck(b *testing.B, h BenchHarness, batch int) {
	e, _ := h.New(b)
	ctx := context.Background()
	q := benchQueue(b, e)
	b.Cleanup(func() { _ = e.DeleteQueue(context.Background(), q.ID) })
	refill := benchMessages(engine.MaxBatch)
	backlog := 0
	b.SetBytes(int64(batch * benchBody))
	b.ReportAllocs()
	for b.Loop() {
		if backlog < batch { // keep a backlog, outside the timing
			b.StopTimer()
			for range 100 {
				if _, err := e.Send(ctx, q, refill); err != nil {
					b.Fatal(err)
				}
			}
			backlog += 100 * len(refill)
			b.StartTimer()
		}
		res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: batch, Visibility: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Messages) != batch {
			b.Fatalf("received %d, want %d (backlog %d)", len(res.Messages), batch, backlog)
		}
		backlog -= len(res.Messages)
		ds := make([]engine.Delivery, len(res.Messages))
		for i, m := range res.Messages {
			ds[i] = m.Delivery
		}
		errs, err := e.Ack(ctx, q, ds)
		if err != nil {
			b.Fatal(err)
		}
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
}
