package sdkgo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

// pathCounter counts the client's requests by path.
type pathCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (p *pathCounter) on(path string, _ []byte) {
	p.mu.Lock()
	p.calls[path]++
	p.mu.Unlock()
}

func (p *pathCounter) get(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[path]
}

// produce sends n messages (bodies m0…) through a Producer from senders goroutines, waits for
// every future and returns the ids by body; a future that does not resolve, or resolves with
// an error, fails the test.
func produce(t *testing.T, p *client.Producer, n, senders int, msg func(i int) client.SendMessage) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	futures := make([]*client.SendFuture, n)
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := s; i < n; i += senders {
				futures[i] = p.Send(ctx, msg(i))
			}
		})
	}
	wg.Wait()
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	ids := map[string]string{}
	seen := map[string]bool{}
	for i, f := range futures {
		select {
		case <-f.Done():
		default:
			t.Fatalf("future %d unresolved after Flush", i)
		}
		m, err := f.Result()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if m.MessageID == "" || seen[m.MessageID] {
			t.Fatalf("message %d: id %q empty or given twice", i, m.MessageID)
		}
		seen[m.MessageID] = true
		ids[msg(i).Body] = m.MessageID
	}
	return ids
}

// drainAll receives and acknowledges everything in queue until it holds nothing, returning
// the messages in the order received.
func drainAll(t *testing.T, c *client.Client, queue string, want int) []client.Message {
	t.Helper()
	var got []client.Message
	deadline := time.Now().Add(60 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		ms, err := c.Receive(t.Context(), queue, client.ReceiveInput{MaxMessages: 10, WaitSeconds: client.Int(1)})
		if err != nil {
			t.Fatal(err)
		}
		hs := make([]string, len(ms))
		for i, m := range ms {
			hs[i] = m.ReceiptHandle
		}
		if len(hs) > 0 {
			if be, err := c.AckBatch(t.Context(), hs); err != nil || be.Err() != nil {
				t.Fatalf("ack: %v %v", err, be.Err())
			}
		}
		got = append(got, ms...)
	}
	return got
}

// checkDelivered fails unless got is exactly the messages of ids, each once.
func checkDelivered(t *testing.T, got []client.Message, ids map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	for _, m := range got {
		if seen[m.MessageID] {
			t.Fatalf("message %s (%s) delivered twice", m.MessageID, m.Body)
		}
		seen[m.MessageID] = true
		if ids[m.Body] != m.MessageID {
			t.Fatalf("received %s with id %s; its send answered %q", m.Body, m.MessageID, ids[m.Body])
		}
	}
	if len(seen) != len(ids) {
		t.Fatalf("received %d distinct messages of %d sent", len(seen), len(ids))
	}
}

// A Producer sends on the send stream: one upgrade, no POST of messages; every future
// resolves to the id of a message stored once, and nothing sent is lost or duplicated.
func TestProducerOverStream(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, client.CreateQueueInput{Name: "produced"})
	pc := &pathCounter{calls: map[string]int{}}
	c := observed(t, tn, pc.on)
	p := c.NewProducer("produced", client.ProducerOptions{})
	const n = 600
	ids := produce(t, p, n, 16, func(i int) client.SendMessage { return client.SendMessage{Body: fmt.Sprint("m", i)} })
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if up, posts := pc.get("/v1/queues/produced/send-stream"), pc.get("/v1/queues/produced/messages"); up != 1 || posts != 0 {
		t.Fatalf("%d stream upgrades and %d sends over HTTP; want 1 and 0", up, posts)
	}
	checkDelivered(t, drainAll(t, tn.c, "produced", n), ids)
	if f := p.Send(t.Context(), client.SendMessage{Body: "late"}); !errors.Is(futureErr(f), client.ErrProducerClosed) {
		t.Fatalf("a send after Close: %v, want ErrProducerClosed", futureErr(f))
	}
}

func futureErr(f *client.SendFuture) error {
	_, err := f.Result()
	return err
}

// A message the service refuses fails its own future with the HTTP send's error and field;
// the other messages of its batch are stored.
func TestProducerMessageErrors(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			tn := newTenant(t)
			tn.queue(t, client.CreateQueueInput{Name: "strict"})
			p := tn.c.NewProducer("strict", client.ProducerOptions{DisableStream: !stream, Window: 1})
			ctx := t.Context()
			good := p.Send(ctx, client.SendMessage{Body: "fine"})
			bad := p.Send(ctx, client.SendMessage{Body: "fifo only", GroupID: "g"})
			if err := p.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := good.Result(); err != nil {
				t.Fatalf("the good message: %v", err)
			}
			e := mustCode(t, futureErr(bad), client.CodeInvalidArgument, 400, "")
			if !strings.HasSuffix(e.Field, ".groupId") {
				t.Fatalf("field %q, want messages[i].groupId", e.Field)
			}
			if cnt := tn.counts(t, "strict"); cnt.Visible != 1 {
				t.Fatalf("counts %+v, want the one good message", cnt)
			}
		})
	}
}

// On a fifo queue, each group's messages are stored in the order of their Sends, over the
// stream and over HTTP, with many groups sending at once.
func TestProducerFifoOrder(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			tn := newTenant(t)
			tn.queue(t, client.CreateQueueInput{Name: "ordered", Type: client.FIFO})
			p := tn.c.NewProducer("ordered", client.ProducerOptions{DisableStream: !stream, Window: 8})
			const groups, per = 6, 40
			ids := produce(t, p, groups*per, groups, func(i int) client.SendMessage {
				// Sender s sends group s's messages in order (produce gives sender s every
				// i ≡ s mod groups, ascending).
				return client.SendMessage{Body: fmt.Sprintf("g%d-%03d", i%groups, i/groups), GroupID: fmt.Sprint("g", i%groups)}
			})
			if err := p.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			got := drainAll(t, tn.c, "ordered", groups*per)
			checkDelivered(t, got, ids)
			last := map[string]string{}
			for _, m := range got {
				if prev := last[m.GroupID]; prev != "" && m.Body < prev {
					t.Fatalf("group %s: %s received after %s", m.GroupID, m.Body, prev)
				}
				last[m.GroupID] = m.Body
			}
		})
	}
}

// Where the send stream cannot be opened (a proxy that refuses WebSocket upgrades), the
// Producer sends the same batches with POST …/messages: every future resolves, nothing is
// lost or duplicated.
func TestProducerFallback(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, client.CreateQueueInput{Name: "proxied"})
	pc := &pathCounter{calls: map[string]int{}}
	c, err := client.New(srv.URL, client.WithToken(tn.token(t, client.ScopeAll)),
		client.WithHTTPClient(&http.Client{Transport: noUpgrade{observer{http.DefaultTransport, pc.on}}}))
	if err != nil {
		t.Fatal(err)
	}
	p := c.NewProducer("proxied", client.ProducerOptions{})
	const n = 200
	ids := produce(t, p, n, 8, func(i int) client.SendMessage { return client.SendMessage{Body: fmt.Sprint("m", i)} })
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if posts := pc.get("/v1/queues/proxied/messages"); posts == 0 {
		t.Fatal("no send went over HTTP")
	}
	checkDelivered(t, drainAll(t, tn.c, "proxied", n), ids)
}

// noUpgrade answers every WebSocket upgrade as a proxy that refuses them does (502) and
// passes the rest on.
type noUpgrade struct{ next http.RoundTripper }

func (n noUpgrade) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		body := "upgrades are not allowed here"
		return &http.Response{StatusCode: http.StatusBadGateway, Header: http.Header{"Content-Type": {"text/plain"}},
			Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
	}
	return n.next.RoundTrip(r)
}

// TestProducerWindowLatency measures, for several Windows, a Producer's send rate and the
// end-to-end delivery latency (Send to a Consume handler) of messages produced as fast as 32
// goroutines can while a consumer takes them — the figures behind DefaultProducerWindow
// (docs/streaming.md). It runs only with QUEUES_MEASURE=1 (it takes a while and its figures
// depend on the machine): go test ./tests/sdkgo -run TestProducerWindowLatency -v.
func TestProducerWindowLatency(t *testing.T) {
	if os.Getenv("QUEUES_MEASURE") != "1" {
		t.Skip("set QUEUES_MEASURE=1 to measure")
	}
	const n = 30_000
	for _, window := range []int{1, 4, 16, 64, -4} { // -4: window 4 over HTTP (DisableStream)
		tn := newTenant(t)
		q := fmt.Sprint("window", max(window, -window), "-http-", window < 0)
		tn.queue(t, client.CreateQueueInput{Name: q})
		var mu sync.Mutex
		lat := make([]time.Duration, 0, n)
		all := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- tn.c.Consume(ctx, q, func(_ context.Context, m *client.Message) error {
				sent, _ := strconv.ParseInt(m.Body, 10, 64)
				mu.Lock()
				lat = append(lat, time.Since(time.Unix(0, sent)))
				if len(lat) == n {
					close(all)
				}
				mu.Unlock()
				return nil
			}, client.ConsumeOptions{Concurrency: 32})
		}()
		p := tn.c.NewProducer(q, client.ProducerOptions{Window: max(window, -window), DisableStream: window < 0})
		start := time.Now()
		var wg sync.WaitGroup
		for s := range 32 {
			wg.Go(func() {
				var last *client.SendFuture
				for i := s; i < n; i += 32 {
					last = p.Send(ctx, client.SendMessage{Body: strconv.FormatInt(time.Now().UnixNano(), 10)})
					if i%(32*64) == s { // each sender keeps at most ~64 of its own unresolved
						_, _ = last.Result()
					}
				}
			})
		}
		wg.Wait()
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		produced := time.Since(start)
		select {
		case <-all:
		case <-time.After(3 * time.Minute):
			t.Fatalf("window %d: delivered %d of %d", window, len(lat), n)
		}
		cancel()
		<-done
		slices.Sort(lat)
		t.Logf("window %2d (negative: HTTP): produce %6.0f msg/s; delivery p50 %v p99 %v max %v", window, n/produced.Seconds(),
			lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	}
}

// A receive stream asked for binary batches (StreamOptions.Binary) delivers each message
// with every field a JSON stream gives it: standard (attributes, priority, traceparent) and
// fifo (groupId, sequenceNumber). The messages are taken over binary, released, and taken
// again over JSON to compare.
func TestStreamBinaryBatches(t *testing.T) {
	tn := newTenant(t)
	ctx := t.Context()
	tn.queue(t, client.CreateQueueInput{Name: "plain"})
	tn.queue(t, client.CreateQueueInput{Name: "grouped.fifo", Type: client.FIFO})
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, c := range []struct {
		queue string
		msgs  []client.SendMessage
	}{
		{"plain", []client.SendMessage{{Body: "é \"quoted\" \n", Attributes: map[string]string{"k": "v", "x": ""}, Priority: 7, Traceparent: tp}, {Body: "b"}}},
		{"grouped.fifo", []client.SendMessage{{Body: "g1", GroupID: "g"}, {Body: "g2", GroupID: "g"}}},
	} {
		if r, err := tn.c.SendBatch(ctx, c.queue, c.msgs); err != nil || r.Err() != nil {
			t.Fatalf("send: %v %v", err, r.Err())
		}
		take := func(binary bool) []client.Message {
			st, err := tn.c.Stream(ctx, c.queue, client.StreamOptions{Binary: binary})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.Credit(ctx, len(c.msgs)); err != nil {
				t.Fatal(err)
			}
			var got []client.Message
			for len(got) < len(c.msgs) {
				b, err := st.Next(ctx)
				if err != nil {
					t.Fatalf("binary %v: %v", binary, err)
				}
				got = append(got, b...)
			}
			for _, m := range got {
				if err := tn.c.Release(ctx, m.ReceiptHandle); err != nil {
					t.Fatal(err)
				}
			}
			slices.SortFunc(got, func(a, b client.Message) int { return strings.Compare(a.Body, b.Body) })
			return got
		}
		bin, js := take(true), take(false)
		consumed := consumeAll(t, tn.c, c.queue, len(c.msgs)) // Consume's default: binary batches
		for _, other := range []struct {
			name string
			msgs []client.Message
		}{{"binary", bin}, {"Consume", consumed}} {
			for i := range other.msgs {
				b, j := other.msgs[i], js[i]
				if b.ReceiptHandle == "" || b.VisibilityDeadline.IsZero() || !b.SentAt.Equal(j.SentAt) {
					t.Fatalf("%s: %s %+v", c.queue, other.name, b)
				}
				b.ReceiptHandle, b.VisibilityDeadline, b.ReceiveCount = j.ReceiptHandle, j.VisibilityDeadline, j.ReceiveCount
				if fmt.Sprintf("%+v", b) != fmt.Sprintf("%+v", j) {
					t.Fatalf("%s:\n%s %+v\njson   %+v", c.queue, other.name, b, j)
				}
			}
		}
	}
}

// consumeAll runs Consume on queue until its handler has seen n messages (acknowledging
// them), and returns them sorted by body.
func consumeAll(t *testing.T, c *client.Client, queue string, n int) []client.Message {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	var got []client.Message
	err := c.Consume(ctx, queue, func(_ context.Context, m *client.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if got = append(got, *m); len(got) == n {
			cancel()
		}
		return nil
	}, client.ConsumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b client.Message) int { return strings.Compare(a.Body, b.Body) })
	return got
}
