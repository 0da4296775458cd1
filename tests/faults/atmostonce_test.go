package faults

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/queueshq/queues/tests/internal/crashtest"
)

// TestAtMostOnceKillAPI (docs/delivery-options.md#at-most-once-queues): two API replicas on one
// Redis; consumers receive from an at-most-once queue through both while one replica is killed with
// SIGKILL and restarted. No message is delivered twice. A receive the killed replica had claimed
// but not answered is lost (at most once promises no more): the loss is bounded by the receives in
// flight at the kill and logged. It runs in the short form too: one kill, a small backlog.
func TestAtMostOnceKillAPI(t *testing.T) {
	s := newStack(t, "", 2, 0)
	tok := s.project()
	ctx := t.Context()
	if _, err := crashtest.Call(ctx, s.hc, http.MethodPost, s.url()+"/v1/queues", tok,
		map[string]any{"name": "once", "delivery": "atMostOnce"}, &struct{}{}); err != nil {
		t.Fatal(err)
	}
	n := int(load()) * 4
	for i := 0; i < n; i += 10 {
		msgs := make([]map[string]any, 10)
		for j := range msgs {
			msgs[j] = map[string]any{"body": fmt.Sprint(i + j)}
		}
		if _, err := crashtest.Call(ctx, s.hc, http.MethodPost, s.url()+"/v1/queues/once/messages", tok,
			map[string]any{"messages": msgs}, &struct{}{}); err != nil {
			t.Fatal(err)
		}
	}
	const consumers = 4
	var mu sync.Mutex
	seen := map[string]int{}
	var got, failed atomic.Int64
	killAt := int64(n / 3)
	reached, killed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			receiveUntilEmpty(ctx, s, tok, killed, func(bodies []string) {
				mu.Lock()
				for _, b := range bodies {
					seen[b]++
				}
				mu.Unlock()
				if got.Add(int64(len(bodies))) >= killAt {
					once.Do(func() { close(reached) })
				}
			}, &failed)
		}()
	}
	select { // the kill comes with the consumers in full flow
	case <-reached:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	s.killAndRestart(&s.apis, 0, s.startAPI)
	close(killed)
	wg.Wait()
	twice := 0
	for b, k := range seen {
		if k > 1 {
			twice++
			t.Errorf("message %s delivered %d times", b, k)
		}
	}
	lost := n - len(seen)
	t.Logf("at-most-once under kill -9 of an API replica: %d sent, %d delivered once, %d twice, %d lost with the killed replica's answers; %d receive calls failed",
		n, len(seen), twice, lost, failed.Load())
	want(t, "messages lost (more than the receives in flight at the kill could hold)", lost, consumers*10)
	var q struct {
		Counts struct{ Visible, InFlight, Delayed int }
	}
	if _, err := crashtest.Call(ctx, s.hc, http.MethodGet, s.url()+"/v1/queues/once", tok, nil, &q); err != nil {
		t.Fatal(err)
	}
	if q.Counts.Visible+q.Counts.InFlight+q.Counts.Delayed != 0 {
		t.Fatalf("counts %+v after draining, want the queue empty and nothing in flight", q.Counts)
	}
}

// receiveUntilEmpty receives (10 at a time, through a random replica) and hands the bodies to
// got, until a receive answers empty after the kill. Failed calls (the killed replica) are
// counted and tried again.
func receiveUntilEmpty(ctx context.Context, s *stack, tok string, killed <-chan struct{}, got func([]string), failed *atomic.Int64) {
	for ctx.Err() == nil {
		var out struct {
			Messages []struct{ Body string }
		}
		if _, err := crashtest.Call(ctx, s.hc, http.MethodPost, s.url()+"/v1/queues/once/receive", tok,
			map[string]any{"maxMessages": 10, "waitSeconds": 0}, &out); err != nil {
			failed.Add(1)
			continue
		}
		bodies := make([]string, len(out.Messages))
		for i, m := range out.Messages {
			bodies[i] = m.Body
		}
		got(bodies)
		if len(bodies) == 0 {
			select {
			case <-killed:
				return
			default:
			}
		}
	}
}
