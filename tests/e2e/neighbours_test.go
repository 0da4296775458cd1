package e2e

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/bench"
	"github.com/queueshq/queues/services/queues/embedded"
)

// TestNoisyNeighbour (noisy neighbours, docs/security.md#what-one-tenant-can-cost): project B's
// ordinary send, receive and ack on one API server (one replica and a pusher on the stack; one node
// on embedded), alone and then beside a project A at every limit — 256 KiB sends at its rate limit
// past its byte quota, all the long polls it may park and more, a queue create/delete loop, a push
// subscription whose endpoint answers after 30 s — through the `queues bench` neighbour
// phase. B gets no errors; A is refused with the right codes only; A's extra long polls are
// answered at once, empty, while its slots are held; nothing grows without bound: the
// server's parked receives stay at A's limit and the process's goroutines come back down.
// B's latency beside A is the bench's to report (docs/measurements/tenancy-neighbours.md), not asserted.
func TestNoisyNeighbour(t *testing.T) {
	srv, _, _ := pushServers(t)
	var watchers func() int
	if w.backend == backendStack {
		watchers = lastReplica.Engine.Watchers // srv's replica, the one A and B use
	} else {
		watchers = lastNode.Engine.Watchers
	}
	tn := newTenantOn(t, srv, srv)
	base := runtime.NumGoroutine()

	const waiting = 20
	var maxWatchers, maxGoroutines atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			raise(&maxWatchers, int64(watchers()))
			raise(&maxGoroutines, int64(runtime.NumGoroutine()))
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	rep, err := bench.Run(context.Background(), bench.Config{URL: srv.URL, Token: tn.token, Prefix: "nb", Phases: []string{bench.PhaseNeighbour},
		Neighbour: bench.NeighbourConfig{OperatorToken: operator, Window: 2 * time.Second, Settle: time.Second,
			// A's byte rate leaves it room to fill its 1 MiB (4 sends) within the window. Its
			// sends share 40 requests a second with 4 extra pollers that retry every 10 ms, so
			// they get a few a second: 2 MiB (8 sends) was once not reached in 3 s.
			MaxStoredBytes: 1 << 20, SendBytesPerSecond: 8 << 20, RequestsPerSecond: 40, MaxWaitingReceives: waiting, MaxQueues: 3, ExtraPolls: 4,
			PushTimeout: 2, Workers: 2}})
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	n := rep.Phases[0].Neighbour
	t.Logf("B send p99 alone %.2f ms, beside A %.2f ms; receive %.2f / %.2f ms; A refused %v, accepted %v; extra polls %d (%d at once); pushes %d; watchers ≤ %d; goroutines %d → ≤ %d",
		n.Alone.ByRoute["send"].P99, n.Beside.ByRoute["send"].P99, n.Alone.ByRoute["receive"].P99, n.Beside.ByRoute["receive"].P99,
		n.A.Refusals, n.A.Accepted, n.A.ExtraPolls, n.A.ExtraAtOnce, n.A.Pushes, maxWatchers.Load(), base, maxGoroutines.Load())

	if len(n.Alone.Errors) > 0 || len(n.Beside.Errors) > 0 {
		t.Errorf("B had errors: alone %v, beside A %v", n.Alone.Errors, n.Beside.Errors)
	}
	if n.Beside.Messages == 0 || n.Beside.ByRoute["receive"].Count == 0 {
		t.Errorf("B made no progress beside A: %+v", n.Beside)
	}
	allowed := map[string]bool{"429 rate_limited": true, "403 quota_exceeded maxStoredBytes": true, "403 quota_exceeded maxQueues": true}
	for k, c := range n.A.Refusals {
		if !allowed[k] {
			t.Errorf("A was refused with %q (%d times): want only %v", k, c, allowed)
		}
	}
	for _, k := range []string{"403 quota_exceeded maxStoredBytes", "403 quota_exceeded maxQueues", "429 rate_limited"} {
		if n.A.Refusals[k] == 0 {
			t.Errorf("A never reached %q: refusals %v", k, n.A.Refusals)
		}
	}
	if n.A.Accepted["send"] == 0 || n.A.Accepted["create"] == 0 || n.A.Accepted["delete"] == 0 {
		t.Errorf("A's load did not run: accepted %v", n.A.Accepted)
	}
	if n.A.ExtraAtOnce == 0 {
		t.Errorf("no extra long poll of A was answered at once while its %d slots were held (tried %d)", waiting, n.A.ExtraPolls)
	}
	if n.A.ParkedHeld != waiting {
		t.Errorf("A's parked long polls were answered early: %d of %d still waiting at the end", n.A.ParkedHeld, waiting)
	}
	if n.A.Pushes == 0 {
		t.Errorf("A's slow endpoint was never pushed to")
	}
	// On embedded the node's pusher also waits on A's subscribed queue when it is empty, with
	// each of its receive loops.
	pusherLoops := int64(1)
	if w.backend != backendStack {
		pusherLoops = embedded.ServeReceiveLoops
	}
	if got := maxWatchers.Load(); got > int64(waiting)+pusherLoops {
		t.Errorf("%d receives parked on the server: more than A's maxWaitingReceives (%d) and its pusher's %d receive loops, B parks none", got, waiting, pusherLoops)
	}
	// Everything A started ends with it: the goroutines come back to where they were.
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > base+50 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > base+50 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines did not come back after A stopped: %d, %d before\n%s", g, base, strings.TrimSpace(string(buf[:runtime.Stack(buf, true)])))
	}
}

func raise(m *atomic.Int64, v int64) {
	for {
		cur := m.Load()
		if v <= cur || m.CompareAndSwap(cur, v) {
			return
		}
	}
}

// TestFullProjectRefusedThenFreed: once a project's send was refused for maxStoredBytes, the
// API checks its exact stored bytes before decoding its next sends: below the limit they are
// decoded and sent as usual; at the limit they are refused at once with the same answer — a
// malformed body included, which shows it was not decoded — until consuming frees bytes.
func TestFullProjectRefusedThenFreed(t *testing.T) {
	tn := newTenant(t)
	tn.op.do("PATCH", "/v1/projects/"+tn.project, map[string]any{"limits": map[string]any{"maxStoredBytes": 100}}).must(t, 200)
	tn.queue(t, "full", nil)
	send := func(body string) resp {
		return tn.a.do("POST", "/v1/queues/full/messages", map[string]any{"messages": []map[string]any{{"body": body}}})
	}
	refused := func(r resp) {
		t.Helper()
		r.fails(t, 403, "quota_exceeded", "")
		if d, _ := r.body["error"].(map[string]any)["details"].(map[string]any); d["limit"] != "maxStoredBytes" {
			t.Fatalf("details: %s", r.raw)
		}
	}
	tn.a.send(t, "full", strings.Repeat("x", 60))
	refused(send(strings.Repeat("x", 60)))        // the engine's refusal: 120 > 100
	tn.a.send(t, "full", strings.Repeat("y", 40)) // 100: still fits, decoded and stored
	refused(send("z"))                            // at the limit
	refused(send("z"))
	tn.a.do("POST", "/v1/queues/full/messages", `{"messages": [`).fails(t, 403, "quota_exceeded", "")
	got := tn.a.do("POST", "/v1/queues/full/receive", map[string]any{"maxMessages": 1}).must(t, 200).list("messages")
	if len(got) != 1 {
		t.Fatalf("received %d messages", len(got))
	}
	tn.a.do("POST", "/v1/receipts/ack", map[string]any{"receiptHandles": []string{got[0]["receiptHandle"].(string)}}).must(t, 200)
	tn.a.send(t, "full", "z") // freed: accepted again on the replica that marked the project
	tn.b.send(t, "full", "z") // and on any other
	tn.a.do("POST", "/v1/queues/full/messages", `{"messages": [`).fails(t, 400, "invalid_argument", "")
}
