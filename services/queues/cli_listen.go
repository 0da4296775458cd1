package main

// queues listen: take a queue's messages over the receive stream and POST them to a local
// URL exactly as the pusher would (docs/push.md: the same body, headers and Standard Webhooks
// signature, from package webhook), then settle each message from the answer as the pusher
// does (webhook.Classify). What `stripe listen` does for Stripe's events, for a push endpoint
// on a laptop, with no public URL.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/sdk/go/client"
	"github.com/queueshq/queues/sdk/go/webhook"
)

type listenFlags struct {
	forward     string
	secret      string
	batch       int
	concurrency int
	timeout     time.Duration
	grace       time.Duration
	consumer    string
}

func (c *cli) listenCmd() *cobra.Command {
	var f listenFlags
	cmd := c.leaf(clientSpec{
		use: "listen QUEUE", short: "forward a queue's messages to a local URL as signed pushes, and settle them from its answers",
		long: `Takes QUEUE's messages over the receive stream and POSTs each batch to --forward exactly as
the pusher would (body, headers, Standard Webhooks signature), then settles every message from
the endpoint's answer as a push subscription does (docs/push.md). Signs with --secret, else with a
development secret printed at start. Ctrl-C stops taking messages; batches being forwarded get
--shutdown-timeout to be answered, and every message not settled is released (visible again at
once).`,
		example: `  queues listen orders --forward http://localhost:3000/api/queues
  queues listen orders --forward http://localhost:8000/hook --secret "$QUEUES_SIGNING_SECRET" --batch 10 --concurrency 4`,
		minArgs: 1, maxArgs: 1, completeArgs: c.queueArg,
		run: func(ctx context.Context, _ *cobra.Command, args []string) error { return c.listen(ctx, args[0], &f) },
	})
	fl := cmd.Flags()
	fl.StringVar(&f.forward, "forward", "", "the http(s) URL to POST each batch to (required)")
	fl.StringVar(&f.secret, "secret", "", "the signing secret (whsec_…; default: a development secret, printed)")
	fl.IntVar(&f.batch, "batch", 10, "messages per POST, 1-10")
	fl.IntVar(&f.concurrency, "concurrency", 1, "POSTs in flight at once, 1-100")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long a POST may take before it counts as failed")
	fl.StringVar(&f.consumer, "consumer-id", "", "receive as this consumer id (required on an exclusive fifo queue)")
	fl.DurationVar(&f.grace, "shutdown-timeout", 5*time.Second, "after Ctrl-C, how long POSTs in flight may take before their messages are released")
	return cmd
}

// check validates the flags and returns the secret to sign with (generated when not given).
func (f *listenFlags) check() (secret string, generated bool, err error) {
	u, perr := url.Parse(f.forward)
	switch {
	case f.forward == "":
		return "", false, usagef("--forward is required (the URL to POST to)")
	case perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "", false, usagef("--forward must be an http(s) URL with a host, not %q", f.forward)
	case f.batch < 1 || f.batch > client.MaxReceiveBatch:
		return "", false, usagef("--batch must be 1-%d", client.MaxReceiveBatch)
	case f.concurrency < 1 || f.concurrency > 100:
		return "", false, usagef("--concurrency must be 1-100")
	case f.timeout <= 0:
		return "", false, usagef("--timeout must be positive")
	case f.grace < 0:
		return "", false, usagef("--shutdown-timeout must not be negative")
	}
	if f.secret == "" {
		return webhook.NewSecret(), true, nil
	}
	if _, err := webhook.Key(f.secret); err != nil {
		return "", false, usagef("--secret must be whsec_ followed by a non-empty base64 key")
	}
	return f.secret, false, nil
}

// listener is one run of queues listen.
type listener struct {
	c      *cli
	f      *listenFlags
	secret string
	queue  webhook.Queue
	sub    string
	hc     *http.Client
	ua     string
	outMu  sync.Mutex
}

func (c *cli) listen(ctx context.Context, queue string, f *listenFlags) error {
	secret, generated, err := f.check()
	if err != nil {
		return err
	}
	q, err := c.client.GetQueue(ctx, queue)
	if err != nil {
		return err
	}
	l := &listener{c: c, f: f, secret: secret, queue: webhook.Queue{ID: q.ID, Name: q.Name}, sub: "qsb_listen",
		hc: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		ua: "queues-listen/" + client.Version()}
	if s, err := c.client.GetSubscription(ctx, queue); err == nil {
		l.sub = s.Slug
	}
	if generated {
		fmt.Fprintf(c.io.stderr, "signing with a development secret (pass --secret to use your subscription's):\n%s\n", secret)
	}
	s, err := c.client.Stream(context.WithoutCancel(ctx), queue, client.StreamOptions{MaxMessages: f.batch, ConsumerID: f.consumer})
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	fmt.Fprintf(c.io.stderr, "forwarding %s to %s (Ctrl-C to stop)\n", q.Name, f.forward)
	return l.run(ctx, s)
}

// run takes batches until ctx ends (Ctrl-C) or the stream does, forwarding each in its own
// goroutine, at most --concurrency at once: credit is granted for that many batches and
// given back as each is settled, so the service never hands over more than is being forwarded.
func (l *listener) run(ctx context.Context, s *client.Stream) error {
	// work outlives ctx by the shutdown timeout: the POSTs in flight at Ctrl-C may finish.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	if err := s.Credit(ctx, l.f.batch*l.f.concurrency); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var err error
	for {
		msgs, nerr := s.Next(ctx)
		if nerr != nil {
			if ctx.Err() == nil {
				err = nerr
			}
			break
		}
		wg.Go(func() {
			l.forward(work, msgs)
			if ctx.Err() == nil {
				_ = s.Credit(ctx, len(msgs))
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(l.f.grace):
		cancelWork() // what is still being forwarded is released by forward
		<-done
	}
	l.releaseBuffered(s)
	return err
}

// releaseBuffered releases the batches the stream delivered that were not taken: after a stop
// they would otherwise stay in flight until their visibility deadline.
func (l *listener) releaseBuffered(s *client.Stream) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		msgs, err := s.Next(ctx)
		cancel()
		if err != nil {
			return
		}
		l.release(msgs)
	}
}

// body is the push body of a batch, as the pusher builds it.
func (l *listener) body(msgs []client.Message) webhook.Body {
	b := webhook.Body{Subscription: l.sub, Queue: l.queue, Messages: make([]webhook.Message, len(msgs))}
	for i, m := range msgs {
		attrs := m.Attributes
		if attrs == nil {
			attrs = map[string]string{}
		}
		wm := webhook.Message{MessageID: m.MessageID, Body: m.Body, Attributes: attrs, ReceiveCount: m.ReceiveCount,
			SentAt: wireTime(m.SentAt), GroupID: m.GroupID, SequenceNumber: m.SequenceNumber, ReceiptHandle: m.ReceiptHandle,
			Traceparent: m.Traceparent}
		if m.ReceiptHandle != "" {
			wm.VisibilityDeadline = wireTime(m.VisibilityDeadline)
		}
		if m.ReplayOf != nil {
			wm.ReplayOf = &webhook.ReplayOf{Topic: m.ReplayOf.Topic, Sequence: m.ReplayOf.Sequence}
		}
		b.Messages[i] = wm
	}
	return b
}

func wireTime(t time.Time) string { return clock.Wire(t) }

// forward POSTs one batch and settles it from the answer. When ctx ends first (Ctrl-C and
// the shutdown timeout passed) the batch is released instead.
func (l *listener) forward(ctx context.Context, msgs []client.Message) {
	data, err := json.Marshal(l.body(msgs))
	if err != nil {
		l.release(msgs)
		return
	}
	inBatch := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		inBatch[m.MessageID] = true
	}
	pctx, cancel := context.WithTimeout(ctx, l.f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodPost, l.f.forward, bytes.NewReader(data))
	if err != nil {
		l.release(msgs)
		return
	}
	id := ids.New().String() // a new attempt id, as the pusher makes one per attempt
	webhook.SetHeaders(req.Header, l.ua, []string{l.secret}, id, time.Now().Unix(), data)
	now := time.Now()
	resp, err := l.hc.Do(req)
	var v webhook.Verdict
	status := 0
	if err != nil {
		if ctx.Err() != nil {
			l.release(msgs)
			l.printf("%s: stopped before an answer: %d released\n", id, len(msgs))
			return
		}
		v = webhook.Verdict{Kind: webhook.Failed, ErrClass: webhook.ClassConnection, Detail: err.Error()}
	} else {
		status = resp.StatusCode
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, webhook.MaxResponseBytes+1))
		_ = resp.Body.Close()
		overflow := len(raw) > webhook.MaxResponseBytes
		v = webhook.Classify(resp.StatusCode, resp.Header, raw[:min(len(raw), webhook.MaxResponseBytes)], overflow, inBatch, now)
		if rerr != nil {
			v = webhook.Verdict{Kind: webhook.Failed, ErrClass: webhook.ClassConnection, Detail: rerr.Error()}
		}
	}
	l.settle(msgs, v)
	l.printf("%s", summary(id, status, len(msgs), v))
}

// listenSettlement is a batch's settlement: the receipt calls to make.
type listenSettlement struct {
	acks, cancels []string
	vis           []client.VisibilityEntry
	dls           []client.DeadLetterEntry
	deferred      int
}

// plan turns a verdict into receipt calls, as the pusher's settle does (docs/push.md).
func plan(msgs []client.Message, v webhook.Verdict) listenSettlement {
	var p listenSettlement
	for _, m := range msgs {
		if m.ReceiptHandle == "" { // at-most-once: gone when received
			continue
		}
		h := m.ReceiptHandle
		switch v.Kind {
		case webhook.AckAll:
			p.acks = append(p.acks, h)
		case webhook.DeferAll:
			p.deferred++
		case webhook.Throttled:
			p.vis = append(p.vis, client.VisibilityEntry{ReceiptHandle: h, VisibilityTimeoutSeconds: ceilSeconds(v.RetryAfter)})
		case webhook.Failed:
			d := webhook.Backoff(m.ReceiveCount, func(n int64) int64 { return rand.Int64N(n + 1) })
			p.vis = append(p.vis, client.VisibilityEntry{ReceiptHandle: h, VisibilityTimeoutSeconds: ceilSeconds(d)})
		case webhook.PerMessage:
			r, listed := v.Results[m.MessageID]
			switch {
			case !listed || r.Outcome == webhook.OutcomeAck:
				p.acks = append(p.acks, h)
			case r.Outcome == webhook.OutcomeDefer:
				p.deferred++
			case r.Outcome == webhook.OutcomeCancel:
				p.cancels = append(p.cancels, h)
			case r.Outcome == webhook.OutcomeDeadLetter:
				p.dls = append(p.dls, client.DeadLetterEntry{ReceiptHandle: h, Reason: r.Reason})
			default: // retry
				secs := 0
				if r.RetryAfterSeconds != nil {
					secs = int(*r.RetryAfterSeconds)
				}
				p.vis = append(p.vis, client.VisibilityEntry{ReceiptHandle: h, VisibilityTimeoutSeconds: secs})
			}
		}
	}
	return p
}

func ceilSeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// settle makes the receipt calls of a verdict over HTTP (they work after the stream ended too).
func (l *listener) settle(msgs []client.Message, v webhook.Verdict) {
	p := plan(msgs, v)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := l.c.client
	var errs []error
	if len(p.acks) > 0 {
		errs = append(errs, batchErr(cl.AckBatch(ctx, p.acks)))
	}
	if len(p.vis) > 0 {
		errs = append(errs, batchErr(cl.ChangeVisibilityBatch(ctx, p.vis)))
	}
	if len(p.dls) > 0 {
		errs = append(errs, batchErr(cl.DeadLetterBatch(ctx, p.dls)))
	}
	if len(p.cancels) > 0 {
		errs = append(errs, batchErr(cl.CancelBatch(ctx, p.cancels)))
	}
	if err := errors.Join(errs...); err != nil {
		l.printf("settling: %v (those messages return at their deadline)\n", err)
	}
}

// release makes msgs visible again at once (visibility 0).
func (l *listener) release(msgs []client.Message) {
	l.settle(msgs, webhook.Verdict{Kind: webhook.PerMessage, Results: releaseAll(msgs)})
}

func releaseAll(msgs []client.Message) map[string]webhook.Result {
	out := make(map[string]webhook.Result, len(msgs))
	for _, m := range msgs {
		out[m.MessageID] = webhook.Result{MessageID: m.MessageID, Outcome: webhook.OutcomeRetry}
	}
	return out
}

func batchErr(be client.BatchErrors, err error) error {
	if err != nil {
		return err
	}
	for _, e := range be {
		if e != nil {
			return e
		}
	}
	return nil
}

// summary is the line printed for a forwarded batch.
func summary(id string, status, n int, v webhook.Verdict) string {
	what := map[webhook.VerdictKind]string{webhook.AckAll: "acknowledged", webhook.DeferAll: "deferred (settle by receipt handle)",
		webhook.PerMessage: "settled per message", webhook.Throttled: "retried after " + v.RetryAfter.String(), webhook.Failed: "failed, retried after a backoff"}[v.Kind]
	s := fmt.Sprintf("%s: %d message(s) -> %d: %s", id, n, status, what)
	if v.Detail != "" {
		s += " (" + v.Detail + ")"
	}
	return s + "\n"
}

func (l *listener) printf(format string, args ...any) {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	fmt.Fprintf(l.c.io.stdout, format, args...)
}
