package enginetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
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
	// SetPartitions, when set, gives a queue n partitions (the partitions=… benchmarks run
	// only on engines that have partitions).
	SetPartitions func(b *testing.B, e engine.Engine, q engine.Queue, n int)
}

// BacklogsEnv names the backlogs (messages queued) the op=receive-ack/backlog=… benchmarks
// run with, comma-separated (default "1000,100000"; docs/measurements/performance.md's scale curve adds 1000000).
const BacklogsEnv = "QUEUES_BENCH_BACKLOGS"

// QueuesEnv is how many queues the op=send/queues=… benchmark spreads its sends over (default
// 1000; docs/measurements/performance.md's scale curve uses 10000).
const QueuesEnv = "QUEUES_BENCH_QUEUES"

// BenchSizes is the backlogs named by BacklogsEnv, or def when it is not set.
func BenchSizes(b *testing.B, def ...int) []int {
	v := os.Getenv(BacklogsEnv)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("%s: %q is not a count", BacklogsEnv, f)
		}
		out = append(out, n)
	}
	return out
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
	// Scale: receive latency against the backlog, throughput against partitions, sends spread
	// over many queues.
	backlogs := BenchSizes(b, 1000, 100_000)
	for _, n := range backlogs {
		b.Run(fmt.Sprintf("op=receive-ack/batch=%d/backlog=%d", engine.MaxBatch, n), func(b *testing.B) { benchBacklog(b, h, n) })
	}
	if h.SetPartitions != nil {
		for _, n := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("op=send-receive-ack/batch=%d/partitions=%d/conc=16", engine.MaxBatch, n), func(b *testing.B) { benchPartitions(b, h, n) })
		}
	}
	queues := 1000
	if v := os.Getenv(QueuesEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s: %q is not a count", QueuesEnv, v)
		}
		queues = n
	}
	b.Run(fmt.Sprintf("op=send/batch=%d/queues=%d/conc=16", engine.MaxBatch, queues), func(b *testing.B) { benchManyQueues(b, h, queues) })
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

// smallBody is the body size of the scale benchmarks (docs/measurements/performance.md's 64-byte workload), so large
// backlogs fit in memory.
const smallBody = 64

func smallMessages(n int) []engine.Message {
	body := strings.Repeat("y", smallBody)
	msgs := make([]engine.Message, n)
	for i := range msgs {
		msgs[i] = engine.Message{Body: body}
	}
	return msgs
}

// fill sends n messages in large engine calls from 4 goroutines (outside the timing).
func fill(b *testing.B, e engine.Engine, q engine.Queue, n int) {
	const chunk = 1000
	var next sync.Mutex
	left := n
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				k := min(chunk, left)
				left -= k
				next.Unlock()
				if k == 0 {
					return
				}
				if _, err := e.Send(context.Background(), q, smallMessages(k)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

func receiveAck(b *testing.B, e engine.Engine, q engine.Queue, n int) (received int, took time.Duration) {
	ctx := context.Background()
	t0 := time.Now()
	res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: n, Visibility: time.Minute})
	took = time.Since(t0)
	if err != nil {
		b.Fatal(err)
	}
	ds := make([]engine.Delivery, len(res.Messages))
	for i, m := range res.Messages {
		ds[i] = m.Delivery
	}
	if len(ds) > 0 {
		if _, err := e.Ack(ctx, q, ds); err != nil {
			b.Fatal(err)
		}
	}
	return len(ds), took
}

// benchBacklog receives and acknowledges batches of 10 from a queue holding about backlog
// messages (64-byte bodies): every op takes 10 and sends 10 back, so the backlog holds. It
// reports receive-ms/op (the receive alone) besides ns/op (receive, ack and the refill send).
func benchBacklog(b *testing.B, h BenchHarness, backlog int) {
	e, _ := h.New(b)
	ctx := context.Background()
	q := benchQueue(b, e)
	b.Cleanup(func() { _ = e.DeleteQueue(context.Background(), q.ID) })
	fill(b, e, q, backlog)
	refill := smallMessages(engine.MaxBatch)
	var recv time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		n, took := receiveAck(b, e, q, engine.MaxBatch)
		if n != engine.MaxBatch {
			b.Fatalf("received %d of a backlog of %d", n, backlog)
		}
		recv += took
		if _, err := e.Send(ctx, q, refill); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(recv.Microseconds())/1000/float64(b.N), "receive-ms/op")
}

// benchPartitions runs 16 goroutines that each send a batch of 10, receive a batch and
// acknowledge it, on a queue of n partitions.
func benchPartitions(b *testing.B, h BenchHarness, n int) {
	e, _ := h.New(b)
	ctx := context.Background()
	q := benchQueue(b, e)
	b.Cleanup(func() { _ = e.DeleteQueue(context.Background(), q.ID) })
	h.SetPartitions(b, e, q, n)
	msgs := smallMessages(engine.MaxBatch)
	var got sync.Mutex
	total := 0
	b.SetParallelism(8) // 16 goroutines on 2 cores
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mine := 0
		for pb.Next() {
			if _, err := e.Send(ctx, q, msgs); err != nil {
				b.Error(err)
				return
			}
			k, _ := receiveAck(b, e, q, engine.MaxBatch)
			mine += k
		}
		got.Lock()
		total += mine
		got.Unlock()
	})
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "msgs/s")
}

// benchManyQueues sends batches of 10 to queues picked at random among n.
func benchManyQueues(b *testing.B, h BenchHarness, n int) {
	e, _ := h.New(b)
	ctx := context.Background()
	qs := make([]engine.Queue, n)
	for i := range qs {
		qs[i] = benchQueue(b, e)
	}
	// The queues are left to the harness's throwaway engine: deleting thousands one by one
	// would take longer than the benchmark.
	msgs := smallMessages(engine.MaxBatch)
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.Send(ctx, qs[rand.IntN(n)], msgs); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*engine.MaxBatch)/b.Elapsed().Seconds(), "msgs/s")
}
