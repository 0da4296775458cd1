package redisengine_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/pkg/testservers/tcpproxy"
)

// TestLostReplyRunsScriptOnce: a TCP proxy between the engine and a real redis-server holds
// Redis's replies, then cuts the connections. The send whose reply was lost fails (outcome
// unknown) and its message is stored once — go-redis's retry used to run the script again
// and store it twice. A receive whose reply was lost leaves its claim in flight, counted
// once, until the visibility deadline, when the message is received again. The client given
// to the engine keeps go-redis's default retries and a short read timeout: the engine must
// not rely on its caller's settings.
func TestLostReplyRunsScriptOnce(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	proxy, err := tcpproxy.Start(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	clk := enginetest.NewClock()
	proxied := newEngine(t, redis.NewClient(&redis.Options{Addr: proxy.Addr(), ReadTimeout: 300 * time.Millisecond}), clk, redisengine.Options{})
	direct := newEngine(t, redis.NewClient(&redis.Options{Addr: addr}), clk, redisengine.Options{})
	ctx := context.Background()
	q := newQueue()
	counts := func(visible, inFlight int64) {
		t.Helper()
		st := must(direct.Stats(ctx, q))
		if st.Visible != visible || st.InFlight != inFlight || st.Delayed != 0 {
			t.Fatalf("counts %+v, want visible %d, in flight %d", st, visible, inFlight)
		}
	}
	// Warm up: the scripts are loaded (so EVALSHA runs them at once) and connections are up.
	must(proxied.Send(ctx, q, []engine.Message{{Body: "warm-up"}}))
	warm := must(proxied.Receive(ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute}))
	must(proxied.Ack(ctx, q, []engine.Delivery{warm.Messages[0].Delivery}))
	counts(0, 0)

	// lost runs op through the proxy while Redis's reply is held, then cuts the connection.
	lost := func(what string, ran func(), op func() error) {
		t.Helper()
		must(proxied.Stats(ctx, q)) // the partition count is cached: op's first command is its script
		proxy.Hold()
		done := make(chan error, 1)
		go func() { done <- op() }()
		ran()
		// The script ran; its reply is held. go-redis re-sent a command past its read
		// timeout (300 ms): give a re-send the time to happen, then cut.
		time.Sleep(400 * time.Millisecond)
		proxy.Cut()
		if err := <-done; err == nil {
			t.Fatalf("%s answered success although its reply was lost", what)
		}
	}
	lost("send", func() { awaitCounts(t, direct, q, 1, 0) }, func() error {
		_, err := proxied.Send(ctx, q, []engine.Message{{Body: "once"}})
		return err
	})
	counts(1, 0)
	res := must(direct.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute}))
	if len(res.Messages) != 1 {
		t.Fatalf("received %d messages after one lost send, want 1 (stored once)", len(res.Messages))
	}
	must(direct.Ack(ctx, q, []engine.Delivery{res.Messages[0].Delivery}))
	counts(0, 0)

	must(direct.Send(ctx, q, []engine.Message{{Body: "claimed"}, {Body: "other"}}))
	lost("receive", func() { awaitCounts(t, direct, q, 1, 1) }, func() error {
		_, err := proxied.Receive(ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})
		return err
	})
	counts(1, 1) // one claim, not two
	clk.Advance(time.Minute + time.Second)
	counts(2, 0)
	res = must(proxied.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute}))
	if len(res.Messages) != 2 {
		t.Fatalf("received %d after the lost claim's deadline, want both", len(res.Messages))
	}
	for _, m := range res.Messages {
		if want := map[string]int{"claimed": 2, "other": 1}[m.Body]; m.ReceiveCount != want {
			t.Fatalf("%q received %d times, want %d", m.Body, m.ReceiveCount, want)
		}
	}
	// Reads retry by themselves after a lost reply.
	proxy.Hold()
	go func() { proxy.WaitHeld(); proxy.Cut() }()
	if st, err := proxied.Stats(ctx, q); err != nil || st.InFlight != 2 {
		t.Fatalf("stats across a cut connection: %+v, %v", st, err)
	}
}

// awaitCounts waits until q's counts are visible and inFlight (a script ran through a proxy
// that holds its reply).
func awaitCounts(t *testing.T, e *redisengine.Engine, q engine.Queue, visible, inFlight int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		st := must(e.Stats(context.Background(), q))
		if st.Visible == visible && st.InFlight == inFlight {
			return
		}
	}
	t.Fatalf("counts never reached visible %d, in flight %d", visible, inFlight)
}
