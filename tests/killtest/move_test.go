package killtest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/tests/internal/crashtest"
)

// TestKillMoveTask kills -9 the API replica running a move task (docs/redrive.md) midway while a
// consumer drains the destination through the other replica, which then takes the lapsed
// lease and finishes the task. Checked: every message of the source arrives in the
// destination with its messageId (nothing lost), at most one batch of them twice, the
// source ends empty and the task's moved count is exact.
func TestKillMoveTask(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server, DynamoDB Local and two queues binaries")
	}
	const (
		n     = 5000
		rate  = 500
		batch = rate / 10 // the runner's batch at this rate
	)
	st := newStack(t)
	st.env = append(st.env, "QUEUES_MOVE_LEASE=2s")
	hc := crashtest.NewHTTPClient(t)
	ctx := t.Context()
	p1, _ := crashtest.Start(t, hc, st, st.dir, "move1")
	tok := st.Token(t, hc, p1.URL)
	call := func(p *crashtest.Proc, method, path string, in, out any) (int, error) {
		return crashtest.Call(ctx, hc, method, p.URL+path, tok, in, out)
	}
	for _, q := range []string{"src", "dst"} {
		if _, err := call(p1, "POST", "/v1/queues", map[string]any{"name": q}, nil); err != nil {
			t.Fatal(err)
		}
	}
	sent := map[string]bool{}
	for i := 0; i < n; i += 10 {
		var msgs []map[string]any
		for j := range 10 {
			msgs = append(msgs, map[string]any{"body": fmt.Sprint(i + j)})
		}
		var ans struct{ Messages []struct{ MessageID string } }
		if _, err := call(p1, "POST", "/v1/queues/src/messages", map[string]any{"messages": msgs}, &ans); err != nil {
			t.Fatal(err)
		}
		for _, m := range ans.Messages {
			sent[m.MessageID] = true
		}
	}
	type task struct {
		ID     string
		Status string
		Moved  int64
		ToMove int64
	}
	var tk task
	if _, err := call(p1, "POST", "/v1/queues/src/move-tasks", map[string]any{"destination": "dst", "maxMessagesPerSecond": rate}, &tk); err != nil {
		t.Fatal(err)
	}
	// p1 took the task at its creation; p2 starts now and finds its lease held.
	p2, _ := crashtest.Start(t, hc, st, st.dir, "move2")
	var mu sync.Mutex
	got := map[string]int{}
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		consume(cctx, hc, p2.URL, tok, &mu, got)
	}()
	get := func(p *crashtest.Proc) task {
		var cur task
		if _, err := call(p, "GET", "/v1/queues/src/move-tasks/"+tk.ID, nil, &cur); err != nil {
			t.Fatal(err)
		}
		return cur
	}
	for get(p2).Moved < n/3 {
		time.Sleep(20 * time.Millisecond)
	}
	p1.Kill()
	atKill := get(p2)
	killedAt := time.Now()
	var done task
	for done = get(p2); done.Status == "running"; done = get(p2) {
		if time.Since(killedAt) > 2*time.Minute {
			t.Fatalf("the task did not resume: %+v", done)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Everything moved is in the destination; let the consumer take the rest.
	for {
		var q struct {
			Counts struct{ Visible, InFlight, Delayed int64 }
		}
		if _, err := call(p2, "GET", "/v1/queues/dst", nil, &q); err != nil {
			t.Fatal(err)
		}
		if q.Counts.Visible+q.Counts.InFlight+q.Counts.Delayed == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	wg.Wait()
	var src struct {
		Counts struct{ Visible, InFlight, Delayed int64 }
	}
	if _, err := call(p2, "GET", "/v1/queues/src", nil, &src); err != nil {
		t.Fatal(err)
	}
	lost, dups := 0, 0
	for id := range sent {
		switch c := got[id]; {
		case c == 0:
			lost++
		case c > 1:
			dups += c - 1
		}
	}
	for id := range got {
		if !sent[id] {
			t.Errorf("received %s, which was never sent", id)
		}
	}
	t.Logf("move task killed at %d of %d moved; resumed on the other replica: %s with %d moved; "+
		"destination received %d distinct, %d lost, %d duplicates (bound %d); %.1fs from kill to end",
		atKill.Moved, n, done.Status, done.Moved, len(got), lost, dups, batch, time.Since(killedAt).Seconds())
	if atKill.Moved >= n {
		t.Errorf("the kill came after the task had moved everything (%d)", atKill.Moved)
	}
	if done.Status != "completed" || done.Moved != n || done.ToMove != n {
		t.Errorf("task after resuming: %+v; want completed with %d moved of %d", done, n, n)
	}
	if lost > 0 || dups > batch {
		t.Errorf("%d lost and %d duplicated; want 0 and at most %d", lost, dups, batch)
	}
	if c := src.Counts; c.Visible+c.InFlight+c.Delayed != 0 {
		t.Errorf("the source still holds %+v", c)
	}
}

// consume receives and acknowledges from dst until ctx ends, counting deliveries per id.
func consume(ctx context.Context, hc *http.Client, url, tok string, mu *sync.Mutex, got map[string]int) {
	for ctx.Err() == nil {
		var ans struct {
			Messages []struct{ MessageID, ReceiptHandle string }
		}
		if _, err := crashtest.Call(ctx, hc, "POST", url+"/v1/queues/dst/receive", tok, map[string]any{"maxMessages": 10, "waitSeconds": 1}, &ans); err != nil {
			continue
		}
		for _, m := range ans.Messages {
			mu.Lock()
			got[m.MessageID]++
			mu.Unlock()
			_, _ = crashtest.Call(ctx, hc, "POST", url+"/v1/receipts/ack", "", map[string]any{"receiptHandle": m.ReceiptHandle}, nil)
		}
	}
}
