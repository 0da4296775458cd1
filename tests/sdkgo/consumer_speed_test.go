//go:build unix

package sdkgo

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/bench"
	"github.com/queueshq/queues/sdk/go/client"
	"github.com/queueshq/queues/services/queues/stack"
)

// Side by side: `queues bench`'s consume phase (pkg/bench, 16 raw receive-then-ack workers,
// batches of 10, 64-byte bodies) and Consume with 32 no-op handlers, against the same API
// replica (rate limits raised out of the way, as scripts/bench.sh runs `queues api`), one
// after the other, alternating which goes first, several rounds; it logs each round and the
// medians (of each side, and of the rounds' ratios: on a shared machine the load changes
// from one round to the next, and the two sides of a round see about the same), and the CPU
// each side costs the process per message (service included: it runs in this process). It is a
// measurement, not a test of the code, so it runs only when asked:
//
//	QUEUES_SIDE_BY_SIDE=5 go test ./tests/sdkgo -run TestConsumerSideBySide -v -count=1
//
// (QUEUES_SIDE_BY_SIDE_COUNT sets the messages per phase, default 10,000.)
func TestConsumerSideBySide(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("QUEUES_SIDE_BY_SIDE"))
	if rounds <= 0 {
		t.Skip("a measurement: set QUEUES_SIDE_BY_SIDE=<rounds> to run it")
	}
	count := 10_000
	if n, err := strconv.Atoi(os.Getenv("QUEUES_SIDE_BY_SIDE_COUNT")); err == nil && n > 0 {
		count = n
	}
	url, closeReplica, err := srv.Replica(t.Context(), stack.Options{
		Rates: api.Rates{StandardSend: 1e6, StandardReceive: 1e6, FIFOSend: 1e6, FIFOReceive: 1e6}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeReplica()
	tn := newTenant(t)
	token := tn.token(t, client.ScopeAll)
	c, err := client.New(url, client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	var benchRates, sdkRates, benchCPU, sdkCPU []float64
	runBench := func(phases ...string) *bench.Report {
		rep, err := bench.Run(t.Context(), bench.Config{URL: url, Token: token, Size: 64, Batch: 10, InFlight: 16,
			Count: count, Duration: 2 * time.Minute, Phases: phases})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Phases {
			if !p.Complete {
				t.Fatalf("bench %s incomplete: %+v", p.Phase, p)
			}
		}
		return rep
	}
	sideBench := func() {
		// The consume phase's CPU is that of produce+consume less that of produce alone.
		c0 := cpuSeconds()
		runBench(bench.PhaseProduce)
		c1 := cpuSeconds()
		rep := runBench(bench.PhaseProduce, bench.PhaseConsume)
		c2 := cpuSeconds()
		benchRates = append(benchRates, rep.Phases[1].MsgsPerSec)
		benchCPU = append(benchCPU, ((c2-c1)-(c1-c0))/float64(count)*1e6)
	}
	sideSDK := func(r int) {
		q := fmt.Sprintf("side-%d", r)
		if _, err := c.CreateQueue(t.Context(), client.CreateQueueInput{Name: q}); err != nil {
			t.Fatal(err)
		}
		n := fill(t, c, q, count, 64)
		c0 := cpuSeconds()
		sdkRates = append(sdkRates, drain(t, c, q, n, 32))
		sdkCPU = append(sdkCPU, (cpuSeconds()-c0)/float64(n)*1e6)
		if err := c.DeleteQueue(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	for r := range rounds {
		if r%2 == 0 {
			sideBench()
			sideSDK(r)
		} else {
			sideSDK(r)
			sideBench()
		}
		t.Logf("round %d: queues bench consume %.0f msg/s (%.0f µs CPU/msg), Consume(32) %.0f msg/s (%.0f µs CPU/msg): %.0f%%",
			r+1, benchRates[r], benchCPU[r], sdkRates[r], sdkCPU[r], 100*sdkRates[r]/benchRates[r])
	}
	ratios := make([]float64, rounds)
	for i := range ratios {
		ratios[i] = sdkRates[i] / benchRates[i]
	}
	mb, ms := median(benchRates), median(sdkRates)
	t.Logf("median of %d rounds, %d messages each: queues bench consume %.0f msg/s, Consume(32) %.0f msg/s (%.0f%%); median of the rounds' ratios %.0f%%",
		rounds, count, mb, ms, 100*ms/mb, 100*median(ratios))
	t.Logf("CPU per message (this process: service, Redis client and consumer; median): queues bench consume %.1f µs, Consume(32) %.1f µs",
		median(benchCPU), median(sdkCPU))
}

// cpuSeconds is the CPU time this process has used: on a machine whose cores are all busy,
// how fast a side goes follows from how much CPU it needs per message.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// fill sends n messages of size bytes to queue with 8 concurrent senders and returns how
// many the queue holds.
func fill(t testing.TB, c *client.Client, queue string, n, size int) int {
	t.Helper()
	body := strings.Repeat("x", size)
	msgs := make([]client.SendMessage, client.MaxSendBatch)
	for i := range msgs {
		msgs[i] = client.SendMessage{Body: body}
	}
	var wg sync.WaitGroup
	var left atomic.Int64
	left.Store(int64(n))
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for {
				k := min(left.Add(-client.MaxSendBatch)+client.MaxSendBatch, client.MaxSendBatch)
				if k <= 0 {
					return
				}
				r, err := c.SendBatch(context.Background(), queue, msgs[:k])
				if err == nil {
					err = r.Err()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	q, err := c.GetQueue(t.Context(), queue)
	if err != nil {
		t.Fatal(err)
	}
	return int(q.Counts.Visible)
}

// drain consumes total messages from queue with concurrency no-op handlers and returns the
// rate: messages handled per second, from Consume's start until it returned (every
// acknowledgement sent).
func drain(t testing.TB, c *client.Client, queue string, total, concurrency int) float64 {
	t.Helper()
	var handled atomic.Int64
	all := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- c.Consume(ctx, queue, func(context.Context, *client.Message) error {
			if handled.Add(1) == int64(total) {
				close(all)
			}
			return nil
		}, client.ConsumeOptions{Concurrency: concurrency})
	}()
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		t.Fatalf("handled %d of %d", handled.Load(), total)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	q, err := c.GetQueue(t.Context(), queue)
	if err != nil {
		t.Fatal(err)
	}
	if n := q.Counts; n.Visible+n.InFlight != 0 {
		t.Fatalf("counts after consuming: %+v", n)
	}
	return float64(total) / el.Seconds()
}
