package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	qclient "github.com/queueshq/queues/sdk/go/client"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/services/queues/stack"
)

func TestMain(m *testing.M) {
	if os.Getenv(aChildEnv) == "1" { // TestAInItsOwnProcess's child: A's load, not the tests
		if err := RunNeighbourAChild(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Fails the package when a test leaves a goroutine running (a producer, consumer or
	// receiver a phase should have stopped), once the test servers are stopped.
	goleak.VerifyTestMain(testservers.ThenStopAll(m))
}

const operator = "bench-test-operator"

// startAPI starts one API replica built by services/queues/stack (as `queues api` builds it) on a
// redis-server and DynamoDB Local, and returns its URL, a project token with every scope and
// the Redis client.
func startAPI(t *testing.T) (string, string, *redis.Client) {
	t.Helper()
	ctx := context.Background()
	addr := testservers.Redis(t)
	ddb, err := testservers.DynamoClient(ctx, testservers.DynamoDB(t))
	if err != nil {
		t.Fatal(err)
	}
	table := testservers.TableName("bench")
	if err := dynamometa.Migrate(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	ring, err := signingkeys.Generate("bt")
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	r, err := stack.New(ctx, stack.Options{Redis: rdb, Dynamo: ddb, Table: table, Keys: ring, OperatorToken: operator,
		Rates:  api.Rates{StandardSend: 1e6, StandardReceive: 1e6, FIFOSend: 1e6, FIFOReceive: 1e6},
		Logger: quiet, SweepEvery: time.Second, PushAllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	// A pusher fleet member, allowed to push to the generator's receiver on loopback.
	pu, err := stack.NewPusher(stack.PusherOptions{Redis: rdb, Dynamo: ddb, Table: table, Keys: ring, AllowPrivate: true,
		Logger: quiet, Refresh: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pctx, stopPusher := context.WithCancel(context.Background())
	pdone := make(chan struct{})
	go func() { defer close(pdone); _ = pu.Run(pctx) }()
	t.Cleanup(func() { stopPusher(); <-pdone; _ = pu.Close() })
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(func() { r.Drain(); srv.Close(); _ = r.Close() })

	post := func(path string, body any, out any) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", srv.URL+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+operator)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 201 {
			msg, _ := io.ReadAll(resp.Body)
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, msg)
		}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	var p struct {
		ID string `json:"id"`
	}
	post("/v1/projects", map[string]any{"name": "bench"}, &p)
	var tok struct {
		Token string `json:"token"`
	}
	post("/v1/projects/"+p.ID+"/tokens", map[string]any{"name": "bench", "scopes": []string{"*"}}, &tok)
	return srv.URL, tok.Token, rdb
}

// checkPhase checks a phase's numbers agree with each other; client is the report's Client.
func checkPhase(t *testing.T, p PhaseReport, count int, client string) {
	t.Helper()
	// Through the SDK's stream consumers, consume sends no HTTP requests at all (the
	// receives and most acknowledgements travel on the streams): no request latency.
	noRequests := client == "sdk" && p.Phase == PhaseConsume && p.Requests == 0
	if !p.Complete || p.Lost != 0 {
		t.Errorf("%s: complete %v, lost %d", p.Phase, p.Complete, p.Lost)
	}
	if p.Messages != int64(count) || p.Seconds <= 0 {
		t.Errorf("%s: %d messages in %.3fs, want %d", p.Phase, p.Messages, p.Seconds, count)
	}
	if p.Phase != PhaseWakeup {
		if got := float64(p.Messages) / p.Seconds; p.MsgsPerSec < got*0.999 || p.MsgsPerSec > got*1.001 {
			t.Errorf("%s: msg/s %.1f, messages/seconds %.1f", p.Phase, p.MsgsPerSec, got)
		}
	}
	var routeReqs int64
	for _, l := range p.ByRoute {
		routeReqs += l.Count
		if !(l.P50 <= l.P99 && l.P99 <= l.Max) {
			t.Errorf("%s: percentiles out of order: %+v", p.Phase, l)
		}
	}
	if routeReqs != p.Requests || p.Latency.Count != p.Requests-p.ByRoute[routeWait].Count {
		t.Errorf("%s: %d requests, %d by route, %d in the latency", p.Phase, p.Requests, routeReqs, p.Latency.Count)
	}
	l := p.Latency
	if !noRequests && !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("%s: percentiles out of order: %+v", p.Phase, l)
	}
	switch p.Phase {
	case PhaseProduce:
		if p.Sent != int64(count) || p.Received != 0 || p.ByRoute["send"].Count == 0 {
			t.Errorf("produce: sent %d received %d", p.Sent, p.Received)
		}
	case PhasePush:
		if p.Acked != p.Received || p.Received-p.Duplicates != p.Messages || p.PushBatches == 0 || p.PushRefused != 0 {
			t.Errorf("push: received %d, acked %d, duplicates %d, messages %d, batches %d, refused %d",
				p.Received, p.Acked, p.Duplicates, p.Messages, p.PushBatches, p.PushRefused)
		}
	default:
		// Every delivery was acknowledged; distinct deliveries are the messages.
		if p.Acked != p.Received || p.Received-p.Duplicates != p.Messages {
			t.Errorf("%s: received %d, acked %d, duplicates %d, messages %d", p.Phase, p.Received, p.Acked, p.Duplicates, p.Messages)
		}
		switch {
		case strings.HasPrefix(client, "raw") || p.Phase == PhaseWakeup:
			// Each receive that delivered is acknowledged by one request.
			if recv := p.ByRoute["receive"].Count + p.ByRoute[routeWait].Count; p.ByRoute["ack"].Count == 0 || recv < p.ByRoute["ack"].Count {
				t.Errorf("%s: %d receives, %d acks", p.Phase, recv, p.ByRoute["ack"].Count)
			}
		case p.Left == nil || *p.Left != 0:
			// The SDK acknowledges in the background: the queue's counts say it is empty.
			t.Errorf("%s: %v messages left in the queue", p.Phase, p.Left)
		}
		if strings.HasSuffix(client, "-poll") && p.Phase != PhaseWakeup && p.ByRoute["receive"].Count == 0 {
			t.Errorf("%s: polling consumers made no receive requests", p.Phase)
		}
	}
	if p.Phase == PhaseE2E || p.Phase == PhaseWakeup || p.Phase == PhasePush {
		if p.Sent != int64(count) {
			t.Errorf("%s: sent %d, want %d", p.Phase, p.Sent, count)
		}
		if p.EndToEnd == nil || p.EndToEnd.Count != p.Received || p.EndToEnd.P50 <= 0 || p.EndToEnd.P99 < p.EndToEnd.P50 {
			t.Errorf("%s: end to end %+v for %d deliveries", p.Phase, p.EndToEnd, p.Received)
		}
	}
}

// TestRunAgainstAPIOnRedis runs every pull phase for real, through the Go SDK (the default:
// stream consumers; and polling ones) and through the raw client, and checks that each
// delivered every message exactly once and that the numbers agree.
func TestRunAgainstAPIOnRedis(t *testing.T) {
	url, token, rdb := startAPI(t)
	for _, c := range []struct {
		typ                  string
		raw, poll, sendBatch bool
		client               string
	}{
		{"standard", false, false, false, "sdk"},
		{"fifo", false, false, false, "sdk"},
		{"standard", false, true, true, "sdk-sendbatch-poll"},
		{"standard", true, false, false, "raw"},
		{"fifo", true, false, false, "raw"},
	} {
		typ := c.typ
		t.Run("type="+typ+"/client="+c.client, func(t *testing.T) {
			const count = 3000
			var mu sync.Mutex
			var lines []string
			rep, err := Run(context.Background(), Config{
				URL: url, Token: token, QueueType: typ, Size: 64, Batch: 10, InFlight: 6, Count: count,
				Duration: time.Minute, Wakeups: 20, Groups: 16, Raw: c.raw, Poll: c.poll, SendBatch: c.sendBatch,
				// The test's own process stands in for a service process: its CPU is read too.
				CPUPIDs:  []NamedPID{{Name: "self-again", PID: os.Getpid()}},
				Phases:   []string{PhaseProduce, PhaseConsume, PhaseE2E, PhaseConsume, PhaseWakeup, PhasePush},
				Progress: func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() },
			})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Client != c.client {
				t.Errorf("report's client %q, want %q", rep.Client, c.client)
			}
			if len(rep.Phases) != 6 {
				t.Fatalf("%d phases", len(rep.Phases))
			}
			for i, p := range rep.Phases {
				n := count
				if p.Phase == PhaseWakeup {
					n = 20
				}
				checkPhase(t, p, n, rep.Client)
				checkCPU(t, p)
				if i == 1 && p.Queue != rep.Phases[0].Queue {
					t.Errorf("consume after produce drained %s, not the produced queue %s", p.Queue, rep.Phases[0].Queue)
				}
				if i == 3 && p.Queue == rep.Phases[0].Queue {
					t.Errorf("a second consume reused the drained queue")
				}
			}
			var text bytes.Buffer
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"produce", "consume", "e2e", "wakeup", "push", "p99 ms", "receive", "ack", "CPU µs per message", "self-again", "client " + c.client} {
				if !strings.Contains(text.String(), want) {
					t.Errorf("text report lacks %q:\n%s", want, text.String())
				}
			}
			t.Logf("\n%s", text.String())
			if _, err := json.Marshal(rep); err != nil {
				t.Fatal(err)
			}
			// The run deleted its queues: no message keys are left in Redis.
			deadline := time.Now().Add(10 * time.Second)
			for {
				ks, err := rdb.Keys(context.Background(), "{q:*:m").Result()
				if err != nil {
					t.Fatal(err)
				}
				if len(ks) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("message keys left after the run: %v", ks)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// checkCPU checks a phase's CPU figures: produce, consume and e2e read the generator's and
// the named process's (the same process here, so the same figures within a tick of each
// reading); the others none.
func checkCPU(t *testing.T, p PhaseReport) {
	t.Helper()
	switch p.Phase {
	case PhaseProduce, PhaseConsume, PhaseE2E:
	default:
		if len(p.CPU) != 0 {
			t.Errorf("%s: CPU %+v", p.Phase, p.CPU)
		}
		return
	}
	if len(p.CPU) != 2 || p.CPU[0].Name != SelfName || p.CPU[1].Name != "self-again" {
		t.Fatalf("%s: CPU %+v", p.Phase, p.CPU)
	}
	for _, c := range p.CPU {
		if c.Error != "" || c.Seconds < 0 || c.PID != os.Getpid() {
			t.Errorf("%s: %+v", p.Phase, c)
		}
		if want := c.Seconds * 1e6 / float64(p.Messages); c.USPerMsg < want*0.99-0.01 || c.USPerMsg > want*1.01+0.01 {
			t.Errorf("%s: %s %.2f µs/msg, %.6f s over %d messages", p.Phase, c.Name, c.USPerMsg, c.Seconds, p.Messages)
		}
	}
	// The two readings of one process bracket the same clock, a few instructions apart.
	if d := p.CPU[1].Seconds - p.CPU[0].Seconds; d < -0.02 || d > 0.02 {
		t.Errorf("%s: one process read as %.3f s and %.3f s", p.Phase, p.CPU[0].Seconds, p.CPU[1].Seconds)
	}
}

func TestBoundedByDuration(t *testing.T) {
	url, token, _ := startAPI(t)
	rep, err := Run(context.Background(), Config{URL: url, Token: token, Count: 10_000_000, Duration: 500 * time.Millisecond,
		InFlight: 2, Phases: []string{PhaseProduce, PhaseE2E}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Phases {
		wantLost := int64(-1) // unknown once cut short
		if p.Phase == PhaseProduce {
			wantLost = 0 // nothing is delivered in a produce phase
		}
		if p.Complete || p.Lost != wantLost || p.Seconds > 5 || p.Messages == 0 {
			t.Errorf("%s: complete %v lost %d after %.2fs with %d messages", p.Phase, p.Complete, p.Lost, p.Seconds, p.Messages)
		}
	}
}

func TestConfigRefusesUnbounded(t *testing.T) {
	for _, c := range []Config{
		{URL: "http://127.0.0.1:1", Duration: -1},
		{URL: "http://127.0.0.1:1", Count: -5},
		{URL: "http://127.0.0.1:1", Size: 8},
		{URL: "http://127.0.0.1:1", Batch: 11},
		{URL: "http://127.0.0.1:1", Size: 1<<20 + 1},
		{URL: "http://127.0.0.1:1", Size: 1 << 20, Batch: 3}, // over a 3 MiB request
		{URL: "http://127.0.0.1:1", Phases: []string{"pull"}},
		{URL: "http://127.0.0.1:1", SendWindow: -1},
		{URL: "http://127.0.0.1:1", Stream: true},               // -stream is the raw path's
		{URL: "http://127.0.0.1:1", Raw: true, Poll: true},      // the raw path always polls
		{URL: "http://127.0.0.1:1", Raw: true, SendBatch: true}, // and always sends requests
		{},
	} {
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestConfigDefaultsAndClient(t *testing.T) {
	for _, c := range []struct {
		cfg    Config
		client string
		window int
	}{
		{Config{URL: "http://x"}, "sdk", qclient.DefaultProducerWindow},
		{Config{URL: "http://x", SendWindow: 16}, "sdk", 16},
		{Config{URL: "http://x", SendBatch: true}, "sdk-sendbatch", qclient.DefaultProducerWindow},
		{Config{URL: "http://x", Poll: true}, "sdk-poll", qclient.DefaultProducerWindow},
		{Config{URL: "http://x", Raw: true}, "raw", qclient.DefaultProducerWindow},
		{Config{URL: "http://x", Raw: true, Stream: true}, "raw-stream", qclient.DefaultProducerWindow},
	} {
		cfg := c.cfg
		if err := cfg.defaults(); err != nil {
			t.Fatalf("%+v: %v", c.cfg, err)
		}
		if got := cfg.clientName(); got != c.client || cfg.SendWindow != c.window {
			t.Errorf("%+v: client %q, window %d; want %q, %d", c.cfg, got, cfg.SendWindow, c.client, c.window)
		}
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	at := time.Unix(1_800_000_000, 123456789)
	b := appendHeader(nil, 42, at)
	if len(b) != headerLen {
		t.Fatalf("header %q is %d bytes", b, len(b))
	}
	seq, ns, ok := parseHeader(string(b) + "xxxx")
	if !ok || seq != 42 || ns != at.UnixNano() {
		t.Fatalf("parsed %d %d %v", seq, ns, ok)
	}
	if _, _, ok := parseHeader("hello"); ok {
		t.Fatal("parsed a foreign body")
	}
}

func TestWorkersSplit(t *testing.T) {
	for _, c := range []struct {
		cfg        Config
		phase      string
		prod, cons int
	}{
		{Config{InFlight: 16}, PhaseE2E, 5, 11},
		{Config{InFlight: 1}, PhaseE2E, 1, 1},
		{Config{InFlight: 16}, PhaseProduce, 16, 0},
		{Config{InFlight: 16}, PhaseConsume, 0, 16},
		{Config{InFlight: 16, Producers: 2, Consumers: 3}, PhaseE2E, 2, 3},
	} {
		if p, q := c.cfg.workers(c.phase); p != c.prod || q != c.cons {
			t.Errorf("%+v %s: %d producers, %d consumers; want %d, %d", c.cfg, c.phase, p, q, c.prod, c.cons)
		}
	}
}
