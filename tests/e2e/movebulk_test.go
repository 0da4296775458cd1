package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMoveBackWhileDraining moves a dead-letter queue's messages back to their source at
// 5,000 a second while consumers drain the source, and checks that every message arrives
// exactly once with its id and that the task counts them all. QUEUES_MOVE_N sets how many
// (default 2,000; `make move100k` runs 100,000). The rate held is logged, not asserted.
func TestMoveBackWhileDraining(t *testing.T) {
	n := 2000
	if v := os.Getenv("QUEUES_MOVE_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			t.Fatalf("QUEUES_MOVE_N=%q", v)
		}
	}
	const rate = 5000
	tn := newTenant(t)
	dlqID := tn.queue(t, "bulk-dlq", nil).str("id")
	tn.queue(t, "bulk-src", map[string]any{"redrive": map[string]any{"deadLetterQueue": dlqID, "maxReceiveCount": 1}})
	raw := &rawClient{base: w.a.URL, token: tn.token, hc: &http.Client{Timeout: 40 * time.Second}}

	// Fill: send n, then receive each with visibility 0 so that the next receive finds it
	// received maxReceiveCount times and dead-letters it.
	sent := make(map[string]bool, n)
	var mu sync.Mutex
	parallel(8, n/10, func(i int) {
		msgs := make([]map[string]any, 10)
		for j := range msgs {
			msgs[j] = map[string]any{"body": fmt.Sprint(i*10 + j)}
		}
		var ans struct{ Messages []struct{ MessageID string } }
		raw.must(t, "POST", "/v1/queues/bulk-src/messages", map[string]any{"messages": msgs}, &ans)
		mu.Lock()
		for _, m := range ans.Messages {
			sent[m.MessageID] = true
		}
		mu.Unlock()
	})
	fillStart := time.Now()
	for {
		var q struct{ Counts struct{ Visible int } }
		raw.must(t, "GET", "/v1/queues/bulk-dlq", nil, &q)
		if q.Counts.Visible == len(sent) {
			break
		}
		parallel(8, 200, func(int) {
			raw.must(t, "POST", "/v1/queues/bulk-src/receive", map[string]any{"maxMessages": 10, "visibilityTimeoutSeconds": 0, "waitSeconds": 0}, nil)
		})
		if time.Since(fillStart) > 10*time.Minute {
			t.Fatalf("the dead-letter queue holds %d of %d after 10 minutes", q.Counts.Visible, len(sent))
		}
	}

	// Move back while 8 consumers drain the source.
	var task struct {
		ID            string
		Status        string
		Moved, ToMove int
	}
	start := time.Now()
	raw.must(t, "POST", "/v1/queues/bulk-dlq/move-tasks", map[string]any{"maxMessagesPerSecond": rate}, &task)
	got := make(map[string]int, n)
	var received atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var ans struct {
					Messages []struct{ MessageID, ReceiptHandle string }
				}
				raw.must(t, "POST", "/v1/queues/bulk-src/receive", map[string]any{"maxMessages": 10, "waitSeconds": 1}, &ans)
				if len(ans.Messages) == 0 {
					continue
				}
				hs := make([]string, len(ans.Messages))
				mu.Lock()
				for i, m := range ans.Messages {
					got[m.MessageID]++
					hs[i] = m.ReceiptHandle
				}
				mu.Unlock()
				received.Add(int64(len(ans.Messages)))
				raw.must(t, "POST", "/v1/receipts/ack", map[string]any{"receiptHandles": hs}, nil)
			}
		}()
	}
	var done time.Duration
	for {
		raw.must(t, "GET", "/v1/queues/bulk-dlq/move-tasks/"+task.ID, nil, &task)
		if task.Status != "running" && done == 0 {
			done = time.Since(start)
		}
		if done != 0 && received.Load() >= int64(len(sent)) || time.Since(start) > 10*time.Minute {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	drained := time.Since(start)
	close(stop)
	wg.Wait()
	dups := 0
	for id := range sent {
		if got[id] != 1 {
			dups++
		}
	}
	t.Logf("moved %d of %d back at %d/s asked: task %s after %.2fs (%.0f messages/s held); consumers drained %d in %.2fs; %d calls retried after 503/429",
		task.Moved, len(sent), rate, task.Status, done.Seconds(), float64(task.Moved)/done.Seconds(), received.Load(), drained.Seconds(), raw.retries.Load())
	if task.Status != "completed" || task.Moved != len(sent) || task.ToMove != len(sent) {
		t.Fatalf("task %+v; want completed with %d moved", task, len(sent))
	}
	if len(got) != len(sent) || dups != 0 {
		t.Fatalf("consumers received %d distinct of %d, %d not exactly once", len(got), len(sent), dups)
	}
}

// parallel runs f(0..n-1) on k goroutines.
func parallel(k, n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// rawClient is a /v1 client without the openapi checker (the bulk test's thousands of calls).
type rawClient struct {
	base, token string
	hc          *http.Client
	retries     atomic.Int64 // answers 503/429 retried
}

func (c *rawClient) must(t *testing.T, method, path string, in, out any) {
	var data []byte
	if in != nil {
		data, _ = json.Marshal(in)
	}
	// A 503 or 429 answer asks to retry (Retry-After): a client under this load does.
	for attempt := 0; ; attempt++ {
		req, _ := http.NewRequestWithContext(t.Context(), method, c.base+path, bytes.NewReader(data))
		req.Header.Set("Authorization", "Bearer "+c.token)
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return
		}
		if (resp.StatusCode == 503 || resp.StatusCode == 429) && attempt < 50 {
			resp.Body.Close()
			c.retries.Add(1)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			var e any
			_ = json.NewDecoder(resp.Body).Decode(&e)
			t.Errorf("%s %s: %d %v", method, path, resp.StatusCode, e)
			return
		}
		if out != nil {
			_ = json.NewDecoder(resp.Body).Decode(out)
		}
		return
	}
}
