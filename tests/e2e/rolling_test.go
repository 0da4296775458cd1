package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/services/queues/stack"
)

// TestRollingRestart (fault F16): two API replicas serve a load of sends, receives and acks
// while each is replaced in turn, three rounds: the new replica starts, then the old one
// drains (waiting receives answer, requests in progress finish) and stops. No acknowledged
// send is lost; requests that reached a stopping replica may fail (reported, not fatal).
func TestRollingRestart(t *testing.T) {
	requireStack(t, "API replicas started and stopped under load")
	tn := newTenant(t)
	tn.queue(t, "rolling", map[string]any{"visibilityTimeoutSeconds": 5})
	type replica struct {
		srv   *httptest.Server
		close func()
	}
	start := func() replica {
		srv, closeFn, err := w.replica(context.Background(), stack.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return replica{srv, closeFn}
	}
	var mu sync.Mutex
	live := []replica{start(), start()}
	pick := func() string {
		mu.Lock()
		defer mu.Unlock()
		return live[rand.IntN(len(live))].srv.URL
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	call := func(path string, in, out any) int {
		b, _ := json.Marshal(in)
		req, _ := http.NewRequest("POST", pick()+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+tn.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		if out != nil && resp.StatusCode == 200 {
			_ = json.NewDecoder(resp.Body).Decode(out)
		}
		return resp.StatusCode
	}
	var (
		hmu       sync.Mutex
		sentOK    = map[string]bool{}
		delivered = map[string]bool{}
		failures  atomic.Int64
		sends     atomic.Int64
		stopSend  atomic.Bool
		stopRecv  atomic.Bool
		wg        sync.WaitGroup
	)
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stopSend.Load(); i++ {
				body := fmt.Sprintf("r-%d-%d", p, i)
				var out struct {
					Messages []struct{ Index int } `json:"messages"`
				}
				st := call("/v1/queues/rolling/messages", map[string]any{"messages": []map[string]any{{"body": body}}}, &out)
				sends.Add(1)
				if st == 200 && len(out.Messages) == 1 {
					hmu.Lock()
					sentOK[body] = true
					hmu.Unlock()
				} else {
					failures.Add(1)
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopRecv.Load() {
				var out struct {
					Messages []struct {
						Body          string `json:"body"`
						ReceiptHandle string `json:"receiptHandle"`
					} `json:"messages"`
				}
				if call("/v1/queues/rolling/receive", map[string]any{"maxMessages": 10, "waitSeconds": 1}, &out) != 200 {
					failures.Add(1)
					continue
				}
				var handles []string
				hmu.Lock()
				for _, m := range out.Messages {
					delivered[m.Body] = true
					handles = append(handles, m.ReceiptHandle)
				}
				hmu.Unlock()
				if len(handles) > 0 {
					call("/v1/receipts/ack", map[string]any{"receiptHandles": handles}, nil)
				}
			}
		}()
	}
	awaitSends := func(n int64) {
		target := sends.Load() + n
		for deadline := time.Now().Add(60 * time.Second); sends.Load() < target; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("fewer than %d sends in 60 s", n)
			}
		}
	}
	for range 3 {
		for i := range 2 {
			awaitSends(100)
			fresh := start()
			mu.Lock()
			old := live[i]
			live[i] = fresh
			mu.Unlock()
			old.close() // drain, then stop
		}
	}
	awaitSends(100)
	stopSend.Store(true)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c := tn.a.counts(t, "rolling")
		if c["visible"] == 0.0 && c["inFlight"] == 0.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained: %v", c)
		}
	}
	stopRecv.Store(true)
	wg.Wait()
	mu.Lock()
	for _, r := range live {
		r.close()
	}
	mu.Unlock()
	lost := 0
	for b := range sentOK {
		if !delivered[b] {
			lost++
		}
	}
	t.Logf("F16 rolling restart, 3 rounds of 2 replicas: acknowledged sends %d, lost %d, failed requests %d", len(sentOK), lost, failures.Load())
	if lost > 0 || len(sentOK) == 0 {
		t.Fatalf("lost %d of %d acknowledged sends", lost, len(sentOK))
	}
}
