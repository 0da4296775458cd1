package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	qclient "github.com/queueshq/queues/sdk/go/client"
)

// The SDK path (the default): produce, consume and e2e drive the service through the Go SDK
// (sdk/go/client) with its defaults, as a Go user's program would — a Producer on the send
// stream for the sends (Config.SendBatch: SendBatch calls), Client.Consume (over the receive stream, or polling with Config.Poll) for the
// consumers — so the figures are what a user gets, not what the generator's private raw
// client gets (Config.Raw keeps that one for diagnosis). Anything that makes these phases
// faster belongs in the SDK, not here.

// newSDKClient returns the SDK client the phases share: the SDK's own default transport
// settings, wrapped to time every HTTP request by route (the SDK does not expose its calls'
// latency; the wrapper only watches).
func newSDKClient(cfg Config, st *atomic.Pointer[stats], throttled *counter) (*qclient.Client, *http.Transport, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64 // as the SDK's default client (sdk/go/client/client.go)
	tr.Proxy = nil              // load goes to the URL given, never through a proxy
	hc := &http.Client{Transport: &timedTransport{next: tr, st: st, throttled: throttled}}
	c, err := qclient.New(cfg.URL, qclient.WithToken(cfg.Token), qclient.WithHTTPClient(hc))
	return c, tr, err
}

// timedTransport records each request's round trip under its route in the current phase's
// stats (none between phases), and counts 429 answers (the SDK retries them itself).
type timedTransport struct {
	next      http.RoundTripper
	st        *atomic.Pointer[stats]
	throttled *counter
}

func (t *timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t0 := time.Now()
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		t.throttled.add(1)
	}
	if st := t.st.Load(); st != nil {
		if route := routeOf(req); route != "" {
			st.request(route, time.Since(t0))
		}
	}
	return resp, err
}

// routeOf names a request by the bench's route names ("" for any other request, such as a
// receive stream's upgrade or a queue's read).
func routeOf(req *http.Request) string {
	if req.Method != http.MethodPost {
		return ""
	}
	p := req.URL.Path
	switch {
	case strings.HasSuffix(p, "/messages"):
		return "send"
	case strings.HasSuffix(p, "/receive"):
		return "receive"
	case p == "/v1/receipts/ack":
		return "ack"
	}
	return ""
}

// sdkSender builds one producer's batches as SDK messages, reusing them.
type sdkSender struct {
	r       *runner
	msgs    []qclient.SendMessage
	buf     []byte
	padding string
	group   int
}

func (r *runner) newSDKSender(worker int) *sdkSender {
	s := r.newSender(worker)
	return &sdkSender{r: r, padding: s.padding, group: worker}
}

// batch returns the messages numbered [first, first+n), sent at now (in a reused slice),
// all of one fifo group (the next of the worker's, as the raw sender's batches).
func (s *sdkSender) batch(first int64, n int, now time.Time) []qclient.SendMessage {
	group := ""
	if s.r.cfg.QueueType == "fifo" {
		group = fmt.Sprintf("g%d", s.group%s.r.cfg.Groups)
		s.group++
	}
	s.msgs = s.msgs[:0]
	for i := range n {
		s.buf = appendHeader(s.buf[:0], first+int64(i), now)
		s.buf = append(s.buf, s.padding...)
		s.msgs = append(s.msgs, qclient.SendMessage{Body: string(s.buf), GroupID: group})
	}
	return s.msgs
}

// send sends the messages numbered [first, first+n) to queue with one SendBatch.
func (s *sdkSender) send(ctx context.Context, st *stats, queue string, first int64, n int) error {
	s.batch(first, n, time.Now())
	// Its request is timed by the transport (timedTransport), as every SDK call is.
	res, err := s.r.sdk.SendBatch(ctx, queue, s.msgs)
	if err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("send refused %d of %d messages: %w", len(res.Failed), n, err)
	}
	if len(res.Messages) != n {
		return fmt.Errorf("send answered %d results for %d messages", len(res.Messages), n)
	}
	st.sent.Add(int64(n))
	return nil
}

// sdkProducers is producers through the SDK: by default one Producer (the send stream,
// Config.SendWindow batches in flight) that n workers feed, each Sending a batch's worth of
// messages and awaiting their futures (as NATS JetStream's bench publishes 10 and awaits the
// 10 acks); with Config.SendBatch, n workers each with one SendBatch call in flight.
func (r *runner) sdkProducers(ctx context.Context, g *group, st *stats, queue string, n, count int) {
	if !r.cfg.SendBatch {
		r.streamProducers(ctx, g, st, queue, n, count)
		return
	}
	var next atomic.Int64
	batch := int64(r.cfg.Batch)
	for w := range n {
		s := r.newSDKSender(w)
		g.go_(ctx, func(ctx context.Context) error {
			for ctx.Err() == nil {
				first := next.Add(batch) - batch
				if first >= int64(count) {
					return nil
				}
				if err := s.send(ctx, st, queue, first, int(min(batch, int64(count)-first))); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// sdkConsumers runs n Client.Consume loops until count distinct messages were delivered,
// then calls done. Each is a consumer as a user would run it with the SDK's defaults, its
// Concurrency the batch size (so each takes a batch at a time, as a raw consumer does),
// over the receive stream unless Config.Poll asks for polling. The handler acknowledges
// every message (returns nil); the SDK sends the acknowledgements in batches, and a failed
// one is counted against Acked.
func (r *runner) sdkConsumers(ctx context.Context, g *group, st *stats, queue string, n, count int, done func()) {
	for range n {
		g.go_(ctx, func(ctx context.Context) error {
			var bad atomic.Value // the first foreign body
			h := func(_ context.Context, m *qclient.Message) error {
				if !st.deliver(m.Body, time.Now()) {
					bad.CompareAndSwap(nil, fmt.Sprintf("%.40q", m.Body))
					return nil // acknowledged all the same: it is not ours to leave behind
				}
				st.acked.Add(1)
				if st.delivered.Load() >= int64(count) {
					done()
				}
				return nil
			}
			opts := qclient.ConsumeOptions{
				Concurrency: r.cfg.Batch,
				WaitSeconds: r.cfg.Wait,
				Polling:     r.cfg.Poll,
				OnError: func(err error) {
					var ce *qclient.ConsumerError
					if errors.As(err, &ce) && ce.Op == "ack" {
						if st.ackFailed.Add(1) == 1 {
							st.firstAckErr.Store(err)
						}
					}
				},
			}
			err := r.sdk.Consume(ctx, queue, h, opts)
			if b := bad.Load(); b != nil {
				return fmt.Errorf("received a message the generator did not send: %s", b)
			}
			if err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		})
	}
}

// sdkLeft reads how many messages queue still holds (visible, in flight or delayed) once a
// phase through the SDK ended: its consumers acknowledge in the background, so this is what
// says every acknowledgement landed. -1 when the counts are not exact.
func (r *runner) sdkLeft(ctx context.Context, queue string) (int64, error) {
	q, err := r.sdk.GetQueue(ctx, queue)
	if err != nil {
		return 0, err
	}
	if q.Counts.Truncated {
		return -1, nil
	}
	return q.Counts.Visible + q.Counts.InFlight + q.Counts.Delayed, nil
}

// streamProducers feeds one Producer of queue from n workers until count messages are
// stored, then closes it. A worker's "send" latency is from its first Send to its last
// message's confirmation.
func (r *runner) streamProducers(ctx context.Context, g *group, st *stats, queue string, n, count int) {
	p := r.sdk.NewProducer(queue, qclient.ProducerOptions{Window: r.cfg.SendWindow, MaxBatch: r.cfg.Batch})
	var next atomic.Int64
	var workers sync.WaitGroup
	batch := int64(r.cfg.Batch)
	for w := range n {
		s := r.newSDKSender(w)
		workers.Add(1)
		g.go_(ctx, func(ctx context.Context) error {
			defer workers.Done()
			futures := make([]*qclient.SendFuture, 0, batch)
			for ctx.Err() == nil {
				first := next.Add(batch) - batch
				if first >= int64(count) {
					return nil
				}
				k := int(min(batch, int64(count)-first))
				t0 := time.Now()
				futures = futures[:0]
				for _, m := range s.batch(first, k, t0) {
					futures = append(futures, p.Send(ctx, m))
				}
				for _, f := range futures {
					if _, err := f.Wait(ctx); err != nil {
						if ctx.Err() != nil {
							return nil
						}
						return fmt.Errorf("send: %w", err)
					}
				}
				st.request("send", time.Since(t0))
				st.sent.Add(int64(k))
			}
			return nil
		})
	}
	g.go_(ctx, func(ctx context.Context) error {
		workers.Wait()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := p.Close(cctx); err != nil && ctx.Err() == nil {
			return fmt.Errorf("closing the producer: %w", err)
		}
		return nil
	})
}
