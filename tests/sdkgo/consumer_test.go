package sdkgo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

// observer is a transport that tells on each request (path and body) before sending it.
type observer struct {
	next http.RoundTripper
	on   func(path string, body []byte)
}

func (o observer) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	o.on(r.URL.Path, body)
	return o.next.RoundTrip(r)
}

// observed returns the tenant's client seeing its requests through on.
func observed(t *testing.T, tn *tenant, on func(path string, body []byte)) *client.Client {
	t.Helper()
	c, err := client.New(srv.URL, client.WithToken(tn.token(t, client.ScopeAll)),
		client.WithHTTPClient(&http.Client{Transport: observer{http.DefaultTransport, on}}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// consume runs Consume in the background; stop cancels it and returns its result.
func consume(t *testing.T, c *client.Client, queue string, h client.Handler, o client.ConsumeOptions) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Consume(ctx, queue, h, o) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Consume did not return 30 s after its context ended")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// await receives from ch or fails the test after timeout.
func await[T any](t *testing.T, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
	var zero T
	return zero
}

// Each outcome settles the message as docs/clients.md says: ack deletes, retry (and an error, and a
// panic) makes it visible again now, retry after d after d, dead-letter moves it with its
// reason.
func TestConsumeOutcomes(t *testing.T) {
	tn := newTenant(t)
	dead := tn.queue(t, client.CreateQueueInput{Name: "dead"})
	tn.queue(t, client.CreateQueueInput{Name: "work", Redrive: &client.Redrive{DeadLetterQueue: dead.ID, MaxReceiveCount: 5}})
	tn.send(t, "work", "ack", "retry", "retry-after", "dead-letter", "error", "panic")

	type event struct {
		body  string
		count int
		at    time.Time
	}
	events := make(chan event, 100)
	var errs sync.Map // op → error
	h := func(ctx context.Context, m *client.Message) error {
		events <- event{m.Body, m.ReceiveCount, time.Now()}
		if m.ReceiveCount > 1 {
			return nil
		}
		switch m.Body {
		case "ack":
			return client.Ack()
		case "retry":
			return client.Retry()
		case "retry-after":
			return fmt.Errorf("wrapped: %w", client.RetryAfter(time.Second))
		case "dead-letter":
			return client.DeadLetter("poison")
		case "error":
			return errors.New("boom")
		case "panic":
			panic("kaboom")
		}
		return nil
	}
	stop := consume(t, tn.c, "work", h, client.ConsumeOptions{Concurrency: 8, OnError: func(err error) {
		var ce *client.ConsumerError
		if errors.As(err, &ce) && ce.Op == "handler" {
			errs.Store(ce.MessageID, ce.Err)
		}
	}})
	seen := map[string][]event{}
	for range 10 { // ack 1, retry 2, retry-after 2, dead-letter 1, error 2, panic 2
		e := await(t, events, 15*time.Second, "deliveries")
		seen[e.body] = append(seen[e.body], e)
	}
	if err := stop(); err != nil {
		t.Fatalf("Consume: %v", err)
	}
	want := map[string]int{"ack": 1, "retry": 2, "retry-after": 2, "dead-letter": 1, "error": 2, "panic": 2}
	for body, n := range want {
		if len(seen[body]) != n {
			t.Fatalf("%s delivered %d times, want %d: %v", body, len(seen[body]), n, seen)
		}
	}
	if d := seen["retry-after"][1].at.Sub(seen["retry-after"][0].at); d < 900*time.Millisecond {
		t.Fatalf("retry after 1 s came back after %v", d)
	}
	var handlerErrs []error
	errs.Range(func(_, v any) bool { handlerErrs = append(handlerErrs, v.(error)); return true })
	var pe *client.PanicError
	if len(handlerErrs) != 2 || !errors.As(errors.Join(handlerErrs...), &pe) || pe.Value != "kaboom" {
		t.Fatalf("OnError saw handler errors %v", handlerErrs)
	}
	if n := tn.counts(t, "work"); n.Visible+n.InFlight+n.Delayed != 0 {
		t.Fatalf("work queue not empty after the consumer stopped: %+v", n)
	}
	dl, err := tn.c.Receive(t.Context(), "dead", client.ReceiveInput{MaxMessages: 10, WaitSeconds: client.Int(0)})
	if err != nil || len(dl) != 1 || dl[0].Body != "dead-letter" || dl[0].DeadLetter == nil || dl[0].DeadLetter.Reason != "poison" {
		t.Fatalf("dead-letter queue: %+v %v", dl, err)
	}
}

// A handler running past half the visibility timeout gets its message's visibility extended,
// again and again: the message stays in flight long after its first deadline.
func TestConsumeHeartbeat(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, client.CreateQueueInput{Name: "slow"})
	tn.send(t, "slow", "long job")
	beats := make(chan struct{}, 100)
	c := observed(t, tn, func(path string, body []byte) {
		if path == "/v1/receipts/visibility" && bytes.Contains(body, []byte(`"visibilityTimeoutSeconds":2`)) {
			beats <- struct{}{}
		}
	})
	started, release := make(chan time.Time, 1), make(chan struct{})
	stop := consume(t, c, "slow", func(ctx context.Context, m *client.Message) error {
		started <- time.Now()
		<-release
		return nil
	}, client.ConsumeOptions{Concurrency: 1, VisibilityTimeout: 2 * time.Second})
	leased := await(t, started, 10*time.Second, "the handler to start")
	for i := range 3 {
		await(t, beats, 5*time.Second, fmt.Sprintf("heartbeat %d", i+1))
	}
	if el := time.Since(leased); el < 2*time.Second {
		t.Fatalf("3 heartbeats after %v; want them at half the 2 s timeout each", el)
	}
	// Past the first deadline, the message is still in flight: nobody else gets it.
	if got, err := tn.c.Receive(t.Context(), "slow", client.ReceiveInput{WaitSeconds: client.Int(0)}); err != nil || len(got) != 0 {
		t.Fatalf("another receive got %d messages (err %v): the heartbeat did not hold the message", len(got), err)
	}
	close(release)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := tn.counts(t, "slow"); n.Visible+n.InFlight != 0 {
		t.Fatalf("counts after the handler finished: %+v", n)
	}
}

// Acknowledgements go in batches of at most AckBatchSize: fewer ack calls than messages,
// several handles per call, and every one sent by the time Consume returns.
func TestConsumeBatchesAcks(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, client.CreateQueueInput{Name: "many"})
	const n = 60
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprint("m", i)
	}
	tn.send(t, "many", bodies...)
	var mu sync.Mutex
	var batches []int
	c := observed(t, tn, func(path string, body []byte) {
		if path != "/v1/receipts/ack" {
			return
		}
		var b struct {
			ReceiptHandles []string `json:"receiptHandles"`
		}
		_ = json.Unmarshal(body, &b)
		mu.Lock()
		batches = append(batches, len(b.ReceiptHandles))
		mu.Unlock()
	})
	handled := make(chan struct{}, n)
	stop := consume(t, c, "many", func(ctx context.Context, m *client.Message) error {
		handled <- struct{}{}
		return nil
	}, client.ConsumeOptions{Concurrency: 32, AckBatchSize: 25, AckInterval: 200 * time.Millisecond, Polling: true})
	for range n {
		await(t, handled, 15*time.Second, "all messages handled")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	total, biggest := 0, 0
	for _, b := range batches {
		total += b
		biggest = max(biggest, b)
	}
	if total != n || len(batches) >= n/2 || biggest < 2 || biggest > 25 {
		t.Fatalf("%d handles acknowledged in %d calls %v; want %d in batches", total, len(batches), batches, n)
	}
	if cnt := tn.counts(t, "many"); cnt.Visible+cnt.InFlight != 0 {
		t.Fatalf("counts after the consumer stopped: %+v", cnt)
	}
	t.Logf("%d acks in %d calls", total, len(batches))
}

// Shutdown: receiving stops, a handler that finishes within ShutdownTimeout is settled, and
// the messages of handlers still running at the deadline are released at once (visible
// again, long before their visibility timeout), their handlers' context cancelled and their
// results ignored.
func TestConsumeShutdownReleases(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, client.CreateQueueInput{Name: "held", VisibilityTimeoutSeconds: client.Int(600)})
	tn.send(t, "held", "finishes", "stuck-1", "stuck-2")
	started := make(chan string, 3)
	stopping := make(chan struct{})
	cancelled := make(chan string, 2)
	stop := consume(t, tn.c, "held", func(ctx context.Context, m *client.Message) error {
		started <- m.Body
		if m.Body == "finishes" {
			<-stopping
			return nil // acknowledged: it finished before the deadline
		}
		<-ctx.Done()
		cancelled <- m.Body
		return nil // ignored: its message was released
	}, client.ConsumeOptions{Concurrency: 3, ShutdownTimeout: 500 * time.Millisecond})
	for range 3 {
		await(t, started, 10*time.Second, "handlers to start")
	}
	result := make(chan error, 1)
	go func() { result <- stop() }()
	close(stopping)
	if err := await(t, result, 10*time.Second, "Consume to return"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		await(t, cancelled, 5*time.Second, "the stuck handlers' context to end")
	}
	got, err := tn.c.Receive(t.Context(), "held", client.ReceiveInput{MaxMessages: 10, WaitSeconds: client.Int(0)})
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]int{}
	for _, m := range got {
		bodies[m.Body] = m.ReceiveCount
	}
	if len(got) != 2 || bodies["stuck-1"] != 2 || bodies["stuck-2"] != 2 {
		t.Fatalf("after shutdown the queue holds %v; want the two stuck messages, released", bodies)
	}
}

// A consumer of a queue that does not exist, or that is deleted under it, returns
// ErrNotFound.
func TestConsumeQueueGone(t *testing.T) {
	tn := newTenant(t)
	noop := func(context.Context, *client.Message) error { return nil }
	if err := tn.c.Consume(t.Context(), "missing", noop, client.ConsumeOptions{}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Consume of a missing queue: %v", err)
	}
	tn.queue(t, client.CreateQueueInput{Name: "doomed"})
	done := make(chan error, 1)
	polling := make(chan struct{}, 10)
	c := observed(t, tn, func(path string, _ []byte) {
		if path == "/v1/queues/doomed/receive" || path == "/v1/queues/doomed/stream" {
			polling <- struct{}{}
		}
	})
	go func() { done <- c.Consume(t.Context(), "doomed", noop, client.ConsumeOptions{}) }()
	await(t, polling, 10*time.Second, "the consumer to poll")
	if err := tn.c.DeleteQueue(t.Context(), "doomed"); err != nil {
		t.Fatal(err)
	}
	if err := await(t, done, 10*time.Second, "Consume to return"); !client.IsNotFound(err) {
		t.Fatalf("Consume of a deleted queue: %v", err)
	}
}

// consumeRate sends n messages to a new queue, consumes them with 32 concurrent no-op
// handlers and returns the rate (messages handled per second, acknowledgements included).
func consumeRate(t testing.TB, n int) float64 {
	tn := newTenant(t)
	tn.queue(t, client.CreateQueueInput{Name: "bench"})
	bodies := make([]string, client.MaxSendBatch)
	for i := range bodies {
		bodies[i] = fmt.Sprintf(`{"n":%d,"pad":"0123456789abcdef0123456789abcdef"}`, i)
	}
	var wg sync.WaitGroup
	var left atomic.Int64
	left.Store(int64(n))
	for range 8 {
		wg.Go(func() {
			for left.Add(-client.MaxSendBatch) > -client.MaxSendBatch {
				tn.send(t, "bench", bodies...)
			}
		})
	}
	wg.Wait()
	total := int(tn.counts(t, "bench").Visible)
	var handled atomic.Int64
	all := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- tn.c.Consume(ctx, "bench", func(context.Context, *client.Message) error {
			if handled.Add(1) == int64(total) {
				close(all)
			}
			return nil
		}, client.ConsumeOptions{Concurrency: 32})
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
	if c := tn.counts(t, "bench"); c.Visible+c.InFlight != 0 {
		t.Fatalf("counts after consuming: %+v", c)
	}
	return float64(total) / el.Seconds()
}

// The consumer's throughput with 32 concurrent handlers on this machine (one API replica,
// Redis and DynamoDB Local in the same box), logged for docs/measurements/consumer.md.
func TestConsumerThroughput(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 500
	}
	t.Logf("consumer, 32 concurrent no-op handlers: %.0f messages/s (%d messages)", consumeRate(t, n), n)
}

// BenchmarkConsume32 reports the consumer's rate as msgs/s (ns/op also counts sending the
// messages first).
func BenchmarkConsume32(b *testing.B) {
	n := max(b.N, 1000)
	b.ResetTimer()
	rate := consumeRate(b, n)
	b.ReportMetric(rate, "msgs/s")
}

// Where the service offers the receive stream, Consume receives and acknowledges over it: no
// receive request goes over HTTP, every message is handled once and acknowledged.
func TestConsumeOverStream(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, client.CreateQueueInput{Name: "streamed"})
	const n = 50
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprint("m", i)
	}
	tn.send(t, "streamed", bodies...)
	var mu sync.Mutex
	calls := map[string]int{}
	c := observed(t, tn, func(path string, _ []byte) {
		mu.Lock()
		calls[path]++
		mu.Unlock()
	})
	handled := make(chan string, n)
	stop := consume(t, c, "streamed", func(ctx context.Context, m *client.Message) error {
		handled <- m.Body
		return nil
	}, client.ConsumeOptions{Concurrency: 8})
	seen := map[string]bool{}
	for range n {
		seen[await(t, handled, 15*time.Second, "all messages handled")] = true
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("handled %d distinct messages of %d", len(seen), n)
	}
	if cnt := tn.counts(t, "streamed"); cnt.Visible+cnt.InFlight != 0 {
		t.Fatalf("counts after the consumer stopped: %+v", cnt)
	}
	mu.Lock()
	defer mu.Unlock()
	// The stream closes when ctx ends; acknowledgements still held then go over HTTP (the
	// handles are as good there), in the one last flush.
	if calls["/v1/queues/streamed/stream"] != 1 || calls["/v1/queues/streamed/receive"] != 0 || calls["/v1/receipts/ack"] > 1 {
		t.Fatalf("HTTP calls %v; want one stream upgrade, no receive request and at most the last ack flush", calls)
	}
}

// A service (or a proxy before it) without the receive stream: Consume polls instead.
func TestConsumeStreamFallback(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, client.CreateQueueInput{Name: "polled"})
	tn.send(t, "polled", "a", "b", "c")
	polls := make(chan struct{}, 100)
	c, err := client.New(srv.URL, client.WithToken(tn.token(t, client.ScopeAll)),
		client.WithHTTPClient(&http.Client{Transport: noStream{polls}}))
	if err != nil {
		t.Fatal(err)
	}
	handled := make(chan string, 3)
	stop := consume(t, c, "polled", func(ctx context.Context, m *client.Message) error {
		handled <- m.Body
		return nil
	}, client.ConsumeOptions{})
	for range 3 {
		await(t, handled, 15*time.Second, "the messages handled by polling")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(polls) == 0 {
		t.Fatal("no receive request was made")
	}
}

// noStream answers every receive stream upgrade as a service without the route does (404
// not_found) and passes the rest on, noting receive requests.
type noStream struct{ polls chan struct{} }

func (n noStream) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/stream"):
		body := `{"error":{"code":"not_found","message":"no such route"}}`
		return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
	case strings.HasSuffix(r.URL.Path, "/receive"):
		select {
		case n.polls <- struct{}{}:
		default:
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// On an at-most-once queue each message reaches a handler once, and whatever the handler
// answers (ack, retry, dead-letter, an error) the consumer settles nothing: the message has no
// handle and left the queue when it was received.
func TestConsumeAtMostOnce(t *testing.T) {
	tn := newTenant(t)
	q := tn.queue(t, client.CreateQueueInput{Name: "once", Delivery: client.DeliveryAtMostOnce})
	if q.Delivery != client.DeliveryAtMostOnce {
		t.Fatalf("created %+v, want delivery atMostOnce", q)
	}
	var settles atomic.Int32
	c := observed(t, tn, func(path string, _ []byte) {
		if strings.HasPrefix(path, "/v1/receipts/") {
			settles.Add(1)
		}
	})
	tn.send(t, "once", "ack", "retry", "dead-letter", "error")
	bodies := make(chan string, 100)
	h := func(ctx context.Context, m *client.Message) error {
		bodies <- m.Body
		if m.ReceiptHandle != "" || m.ReceiveCount != 1 {
			return fmt.Errorf("message %+v: want no handle and receiveCount 1", m)
		}
		switch m.Body {
		case "retry":
			return client.Retry()
		case "dead-letter":
			return client.DeadLetter("poison")
		case "error":
			return errors.New("boom")
		}
		return nil
	}
	var other atomic.Value
	stop := consume(t, c, "once", h, client.ConsumeOptions{Concurrency: 4, OnError: func(err error) {
		var ce *client.ConsumerError
		if !errors.As(err, &ce) || ce.Op != "handler" || ce.Err.Error() != "boom" {
			other.Store(err)
		}
	}})
	seen := map[string]int{}
	for range 4 {
		seen[await(t, bodies, 15*time.Second, "deliveries")]++
	}
	tn.send(t, "once", "last") // sent after the retry: a redelivery would come first or beside it
	for b := await(t, bodies, 15*time.Second, "the last message"); b != "last"; b = await(t, bodies, 15*time.Second, "the last message") {
		seen[b]++
	}
	if err := stop(); err != nil {
		t.Fatalf("Consume: %v", err)
	}
	for b, n := range seen {
		if n != 1 {
			t.Fatalf("%s delivered %d times, want once: %v", b, n, seen)
		}
	}
	if n := settles.Load(); n != 0 {
		t.Fatalf("the consumer made %d receipt calls, want none", n)
	}
	if err := other.Load(); err != nil {
		t.Fatalf("OnError: %v", err)
	}
	if n := tn.counts(t, "once"); n.Visible+n.InFlight+n.Delayed != 0 {
		t.Fatalf("queue not empty: %+v", n)
	}
}

// TestConsumeCancel: a handler's Cancel() returns the message uncounted
// (docs/delivery-options.md#cancel): it comes again with the same receiveCount.
func TestConsumeCancel(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, client.CreateQueueInput{Name: "cancelled"})
	tn.send(t, "cancelled", "m")
	counts := make(chan int, 10)
	var calls atomic.Int32
	h := func(ctx context.Context, m *client.Message) error {
		counts <- m.ReceiveCount
		if calls.Add(1) == 1 {
			return client.Cancel()
		}
		return nil
	}
	stop := consume(t, tn.c, "cancelled", h, client.ConsumeOptions{})
	first := await(t, counts, 15*time.Second, "the first delivery")
	second := await(t, counts, 15*time.Second, "the delivery after the cancel")
	if err := stop(); err != nil {
		t.Fatalf("Consume: %v", err)
	}
	if first != 1 || second != 1 {
		t.Fatalf("receiveCounts %d then %d, want 1 and 1", first, second)
	}
	if n := tn.counts(t, "cancelled"); n.Visible+n.InFlight+n.Delayed != 0 {
		t.Fatalf("queue not empty: %+v", n)
	}
}

// Consumers stopped while they acknowledge over their streams (as a benchmark stops them at
// its last message): every acknowledgement lands and none is reported failed. The stream used
// to be closed under an ack in flight — by Close, or by a credit write whose context the stop
// had ended, which closes the websocket — and the ack, re-sent over HTTP for handles the
// service had already acknowledged, was answered receipt_handle_stale.
func TestConsumeStopUnderStreamAcks(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, client.CreateQueueInput{Name: "stopping"})
	const n, consumers = 300, 4
	bodies := make([]string, n)
	for round := range 6 {
		for i := range bodies {
			bodies[i] = fmt.Sprint("r", round, "m", i)
		}
		for i := 0; i < n; i += 10 {
			tn.send(t, "stopping", bodies[i:i+10]...)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var handled atomic.Int64
		var mu sync.Mutex
		var errs []error
		done := make(chan error, consumers)
		for range consumers {
			go func() {
				done <- tn.c.Consume(ctx, "stopping", func(context.Context, *client.Message) error {
					if handled.Add(1) == n {
						cancel() // at once, with acknowledgements in flight
					}
					return nil
				}, client.ConsumeOptions{Concurrency: 10, AckBatchSize: 10, OnError: func(err error) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}})
			}()
		}
		for range consumers {
			if err := await(t, done, 60*time.Second, "the consumers to stop"); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		if len(errs) > 0 {
			t.Fatalf("round %d: OnError saw %d errors, the first: %v", round, len(errs), errs[0])
		}
		if cnt := tn.counts(t, "stopping"); cnt.Visible+cnt.InFlight != 0 {
			t.Fatalf("round %d: counts after the consumers stopped: %+v", round, cnt)
		}
	}
}
