package api

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/metacache"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
)

// fairServer is a Server on the embedded engine with one queue of the given fairness.
func fairServer(t *testing.T, fairness string) (*Server, *embeddedengine.Engine, meta.Queue) {
	t.Helper()
	clk := clock.Real{}
	eng, err := embeddedengine.Open(filepath.Join(t.TempDir(), "f.db"), clk, embeddedengine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	ring, err := signingkeys.Generate("k")
	if err != nil {
		t.Fatal(err)
	}
	store := memmeta.New()
	cache := metacache.New(store, &metacache.LocalBus{}, clk, 0)
	t.Cleanup(cache.Close)
	s := New(Config{Engine: eng, Meta: cache, Auth: auth.New(ring, "op", clk.Now), Receipts: receipt.NewSigner(ring), Tenancy: store})
	p := meta.Project{ID: ids.New(), Name: "p", CreatedAt: time.Now()}
	if err := store.CreateProject(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	q := s.NewQueue(p.ID, "fair", "standard")
	q.Fairness = fairness
	q.VisibilityTimeoutSeconds = 3600
	if err := s.CreateQueue(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	return s, eng, q
}

// await waits for cond, which an event elsewhere makes true (a receive parking).
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func sendN(t *testing.T, s *Server, q meta.Queue, n int) {
	t.Helper()
	msgs := make([]engine.Message, n)
	for i := range msgs {
		msgs[i] = engine.Message{Body: fmt.Sprint("m", i)}
	}
	if _, err := s.Send(t.Context(), q, msgs); err != nil {
		t.Fatal(err)
	}
}

func recvAs(ctx context.Context, s *Server, q meta.Queue, id string, bound, max int, wait time.Duration) ([]engine.Received, error) {
	return s.Receive(ctx, q, engine.ReceiveRequest{Max: max, Visibility: time.Hour,
		Consumer: &engine.ConsumerOf{ID: id, MaxBacklog: bound}}, wait)
}

// The seed's example (docs/delivery-options.md#consumers-backlogs-and-fairness): consumers with
// backlogs 2, 4 and 10 holding 1, 3 and 4 wait on a proportional queue; the next message goes to
// the third (share 0.4), the one after to the first (0.5), then the second (0.75). They park in the
// order first, second, third, so arrival order or a race would not give this.
func TestProportionalFairnessSeedExample(t *testing.T) {
	s, _, q := fairServer(t, FairnessProportional)
	consumers := []struct {
		id          string
		bound, hold int
	}{{"first", 2, 1}, {"second", 4, 3}, {"third", 10, 4}}
	for _, c := range consumers {
		sendN(t, s, q, c.hold)
		if ms, err := recvAs(t.Context(), s, q, c.id, c.bound, c.hold, 0); err != nil || len(ms) != c.hold {
			t.Fatalf("%s holding %d: %d, %v", c.id, c.hold, len(ms), err)
		}
	}
	got := make(chan string, 3)
	for i, c := range consumers {
		go func() {
			ms, err := recvAs(t.Context(), s, q, c.id, c.bound, 1, 20*time.Second)
			if err != nil || len(ms) != 1 {
				t.Errorf("%s's long poll: %d messages, %v", c.id, len(ms), err)
			}
			got <- c.id
		}()
		await(t, fmt.Sprintf("%d parked", i+1), func() bool { return s.Service.Waiting(q.ID) == i+1 })
	}
	for i, want := range []string{"third", "first", "second"} {
		sendN(t, s, q, 1)
		if who := <-got; who != want {
			t.Fatalf("message %d went to %s, want %s", i+1, who, want)
		}
		await(t, "the served one gone", func() bool { return s.Service.Waiting(q.ID) == 2-i })
	}
}

// Eight consumers wait on a roundRobin queue; each round sends a burst of 3 messages while
// all eight wait. Over 80 rounds each consumer's share must be within ±10 % of the mean (30).
// A consumer served holds its message until the next round starts (it is processing), so
// every burst is decided among waiting receives only.
func TestRoundRobinSpread(t *testing.T) {
	s, _, q := fairServer(t, FairnessRoundRobin)
	counts := spread(t, s, q, func() int { return s.Service.Waiting(q.ID) })
	t.Logf("roundRobin deliveries per consumer (8 consumers, 80 bursts of 3): %v", counts)
	mean := 80 * 3 / 8.0
	for i, n := range counts {
		if float64(n) < mean*0.9 || float64(n) > mean*1.1 {
			t.Fatalf("consumer %d got %d deliveries, outside ±10%% of the mean %.0f: %v", i, n, mean, counts)
		}
	}
}

// spread runs the rounds of TestRoundRobinSpread and answers each consumer's deliveries;
// parked counts the receives waiting.
func spread(t *testing.T, s *Server, q meta.Queue, parked func() int) []int {
	const consumers, rounds, burst = 8, 80, 3
	counts := make([]int, consumers)
	delivered := make(chan int, consumers)
	var mu sync.Mutex
	next := make(chan struct{})
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(t.Context())
	for i := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ms, err := recvAs(ctx, s, q, fmt.Sprint("c", i), 0, 1, 20*time.Second)
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					t.Errorf("consumer %d: %v", i, err)
					return
				}
				if len(ms) == 0 {
					continue
				}
				if _, err := s.Ack(t.Context(), []engine.Delivery{ms[0].Delivery}); err != nil {
					t.Errorf("ack: %v", err)
				}
				mu.Lock()
				round := next // closed when the next round starts
				mu.Unlock()
				delivered <- i
				select {
				case <-round:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	for r := range rounds {
		await(t, fmt.Sprintf("round %d: all parked", r), func() bool { return parked() == consumers })
		sendN(t, s, q, burst)
		for range burst {
			counts[<-delivered]++
		}
		mu.Lock()
		close(next)
		next = make(chan struct{})
		mu.Unlock()
	}
	cancel() // ends the long polls
	wg.Wait()
	return counts
}
