package client_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/bench"
	"github.com/queueshq/queues/pkg/client"
	"github.com/queueshq/queues/pkg/stack"
)

// Side by side: `queues bench`'s consume phase (pkg/bench, 16 raw receive-then-ack workers,
// batches of 10, 64-byte bodies) and Consume with 32 no-op handlers, against the same API
// replica (rate limits raised out of the way, as scripts/bench.sh runs `queues api`), one
// after the other, alternating which goes first, several rounds; it logs each round and the
// medians. It is a measurement, not a test of the code, so it runs only when asked:
//
//	QUEUES_SIDE_BY_SIDE=5 go test ./pkg/client -run TestConsumerSideBySide -v -count=1
//
// (QUEUES_SIDE_BY_SIDE_COUNT sets the messages per phase, default 20,000.)
func TestConsumerSideBySide(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("QUEUES_SIDE_BY_SIDE"))
	if rounds <= 0 {
		t.Skip("a measurement: set QUEUES_SIDE_BY_SIDE=<rounds> to run it")
	}
	count := 20_000
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
	var benchRates, sdkRates []float64
	runBench := func() {
		rep, err := bench.Run(t.Context(), bench.Config{URL: url, Token: token, Size: 64, Batch: 10, InFlight: 16,
			Count: count, Duration: 2 * time.Minute, Phases: []string{bench.PhaseProduce, bench.PhaseConsume}})
		if err != nil {
			t.Fatal(err)
		}
		if p := rep.Phases[1]; !p.Complete {
			t.Fatalf("bench consume incomplete: %+v", p)
		}
		benchRates = append(benchRates, rep.Phases[1].MsgsPerSec)
	}
	runSDK := func(r int) {
		q := fmt.Sprintf("side-%d", r)
		if _, err := c.CreateQueue(t.Context(), client.CreateQueueInput{Name: q}); err != nil {
			t.Fatal(err)
		}
		sdkRates = append(sdkRates, drain(t, c, q, fill(t, c, q, count, 64), 32))
		if err := c.DeleteQueue(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	for r := range rounds {
		if r%2 == 0 {
			runBench()
			runSDK(r)
		} else {
			runSDK(r)
			runBench()
		}
		t.Logf("round %d: queues bench consume %.0f msg/s, Consume(32) %.0f msg/s (%.0f%%)",
			r+1, benchRates[r], sdkRates[r], 100*sdkRates[r]/benchRates[r])
	}
	mb, ms := median(benchRates), median(sdkRates)
	t.Logf("median of %d rounds, %d messages each: queues bench consume %.0f msg/s, Consume(32) %.0f msg/s: %.0f%%",
		rounds, count, mb, ms, 100*ms/mb)
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
