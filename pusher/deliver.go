package pusher

// The wire format of a push and its delivery: build the signed request, send it, classify
// the answer (settle.go applies the verdict).

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/endpoint"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/sdk/go/webhook"
)

func formatTime(t time.Time) string { return clock.Wire(t) }

// deliver pushes one batch: build the signed request, send it, and turn the answer into a
// verdict that settles the batch and is logged as an attempt. A batch that may not be
// pushed (the subscription paused or gone, the lease lost, too little time left before its
// visibility deadline, its slot preempted before or during the push) is given back instead.
func (w *worker) deliver(sl *slot, q queueInfo, batch []engine.Received, receivedAt time.Time) (flowResult, *attempt) {
	sub, ok := w.current()
	if !ok {
		w.giveBack(q, batch)
		return flowNone, nil
	}
	now := w.p.cfg.Clock.Now()
	timeout := time.Duration(sub.TimeoutSeconds) * time.Second
	if sub.Paused || sub.Disabled || !w.leaseValid() || sl.lost() || tooLate(q, batch, now, timeout+w.p.cfg.SendMargin) {
		w.giveBack(q, batch)
		return flowNone, nil
	}
	req, err := w.build(sub, q, batch)
	if err != nil {
		w.giveBack(q, batch)
		return flowNone, nil
	}
	ctx, cancel := context.WithTimeout(sl.ctx, timeout)
	defer cancel()
	ctx, span := startPushSpan(ctx, sub.ID, w.qid, req.body.Messages)
	defer span.End()
	res, ok := w.send(ctx, sub, req, now)
	if !ok {
		return flowNone, nil // killed mid-flight: settle nothing, as a crashed process would
	}
	if sl.lost() {
		// Abandoned for a subscription below its share: not the endpoint's failure, so no
		// attempt is logged and the batch returns at once.
		w.giveBack(q, batch)
		return flowNone, nil
	}
	endPushSpan(span, res.status, res.v.ErrClass)
	flow, at := w.verdict(sub, req, res, now)
	at.q, at.batch, at.v, at.receivedAt = q, batch, res.v, receivedAt
	return flow, at
}

// tooLate tells whether the batch's soonest visibility deadline comes within need of now. A
// batch of an at-most-once queue has no deadline: it was removed when received.
func tooLate(q queueInfo, batch []engine.Received, now time.Time, need time.Duration) bool {
	return !q.eq.AtMostOnce && earliestDeadline(batch).Sub(now) < need
}

// earliestDeadline is the soonest visibility deadline of the batch.
func earliestDeadline(batch []engine.Received) time.Time {
	deadline := batch[0].VisibilityDeadline
	for _, m := range batch[1:] {
		if m.VisibilityDeadline.Before(deadline) {
			deadline = m.VisibilityDeadline
		}
	}
	return deadline
}

// pushRequest is a built push: the body, its bytes and the attempt's id.
type pushRequest struct {
	body      webhook.Body
	data      []byte
	attemptID string
	inBatch   map[string]bool // message ids, for classify
	msgIDs    []string
	batch     []engine.Received
	req       *http.Request // without its context, headers or signature yet
}

// build makes the request body of a batch (receipt handles signed, traceparent split out).
func (w *worker) build(sub meta.Subscription, q queueInfo, batch []engine.Received) (*pushRequest, error) {
	r := &pushRequest{
		body:      webhook.Body{Subscription: sub.ID.Slug(ids.SubscriptionPrefix), Queue: webhook.Queue{ID: w.qid.String(), Name: q.name}, Messages: make([]webhook.Message, len(batch))},
		attemptID: ids.New().String(), inBatch: make(map[string]bool, len(batch)), msgIDs: make([]string, len(batch)),
	}
	for i, m := range batch {
		attrs, tp, rp := engine.SplitReserved(m.Attributes)
		if attrs == nil {
			attrs = map[string]string{}
		}
		pm := webhook.Message{
			MessageID: m.MessageID.String(), Body: m.Body, Attributes: attrs, ReceiveCount: m.ReceiveCount,
			SentAt: formatTime(m.SentAt), GroupID: m.GroupID, Traceparent: tp, ReplayOf: pushReplayOf(rp),
		}
		if !q.eq.AtMostOnce { // an at-most-once message is gone already: nothing to settle later
			pm.ReceiptHandle = w.p.cfg.Receipts.Sign(m.Delivery)
			pm.VisibilityDeadline = formatTime(m.VisibilityDeadline)
		}
		if q.eq.Type == engine.FIFO {
			pm.SequenceNumber = strconv.FormatUint(m.SequenceNumber, 10)
		}
		r.body.Messages[i] = pm
		r.inBatch[pm.MessageID] = true
		r.msgIDs[i] = pm.MessageID
	}
	var err error
	if r.data, err = json.Marshal(r.body); err != nil {
		return nil, err
	}
	r.batch = batch
	r.req, err = http.NewRequest(http.MethodPost, sub.Endpoint, bytes.NewReader(r.data))
	return r, err
}

// sendResult is what came back from one push.
type sendResult struct {
	status  int // 0: no response
	latency time.Duration
	v       verdict
}

// send signs and POSTs the request and classifies the answer. ok is false when the replica
// was killed while the request was out. The signature's webhook-timestamp is the wall clock,
// not the injected one (see Config.Clock).
func (w *worker) send(ctx context.Context, sub meta.Subscription, r *pushRequest, now time.Time) (res sendResult, ok bool) {
	p := w.p
	req := r.req.WithContext(ctx)
	ts := time.Now().Unix()
	webhook.SetHeaders(req.Header, "queues-pusher/1", sub.Secrets(now), r.attemptID, ts, r.data)
	if err := w.setToken(ctx, req, sub, r.body.Queue.Name); err != nil {
		// Without its token the receiver would refuse the push: fail it here, saying why.
		res.v = verdict{Kind: failed, ErrClass: ErrConnection, Detail: truncate(err.Error(), 200)}
		return res, true
	}
	setTraceparent(req, ctx, r.body.Messages)
	p.m.messages.WithLabelValues(mPushed).Add(float64(len(r.msgIDs)))
	p.meter(sub.ProjectID, r.batch)

	start := time.Now()
	resp, err := p.client.Do(req)
	if err == nil {
		res.status = resp.StatusCode
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
		_ = resp.Body.Close()
		if rerr != nil {
			err = rerr
		} else {
			overflow := len(raw) > MaxResponseBytes
			if overflow {
				raw = raw[:MaxResponseBytes]
			}
			res.v = classify(resp.StatusCode, resp.Header, raw, overflow, r.inBatch, now)
		}
	}
	res.latency = time.Since(start)
	if err != nil {
		if p.killed.Load() {
			return res, false
		}
		class := errClass(err)
		res.v = verdict{Kind: failed, ErrClass: class, Detail: errDetail(err, class), SlowDown: class == ErrTimeout}
	}
	p.m.latency.Observe(res.latency.Seconds())
	return res, true
}

// attempt is an answered push: its verdict, to settle, and its entry of the subscription's
// attempts log.
type attempt struct {
	sub ids.ID
	a   meta.Attempt

	q          queueInfo
	batch      []engine.Received
	v          verdict
	receivedAt time.Time
}

// finish settles an answered push's messages, records the attempt in the log and reports it
// (Config.OnAttempt). It runs after the batch's slots are released: maxInFlight bounds the
// requests out at the endpoint, and the engine writes that follow the answer (durable ones
// on serve) need not hold them. Those writes are bounded apart (worker.settling).
func (w *worker) finish(at *attempt) {
	if at == nil {
		return
	}
	w.settleMessages(at.q, at.batch, at.v, at.receivedAt)
	p := w.p
	lctx, lcancel := context.WithTimeout(p.ioCtx, 5*time.Second)
	defer lcancel()
	if err := p.cfg.Attempts.Record(lctx, at.sub, at.a); err != nil && lctx.Err() == nil {
		p.log.Warn("recording a push attempt failed", "queue", w.qid.String(), "err", err)
	}
	if p.cfg.OnAttempt != nil {
		p.cfg.OnAttempt(w.qid, at.a)
	}
}

// verdict turns a settled push into the flow-control signal and the attempt (finish logs it).
func (w *worker) verdict(sub meta.Subscription, r *pushRequest, res sendResult, now time.Time) (flowResult, *attempt) {
	p, v := w.p, res.v
	a := meta.Attempt{At: now.UTC(), AttemptID: r.attemptID, MessageIDs: r.msgIDs, StatusCode: res.status, LatencyMs: res.latency.Milliseconds(), Error: v.ErrClass, Detail: v.Detail}
	flow := flowSuccess
	switch v.Kind {
	case ackAll:
		a.Outcome = meta.AttemptAcknowledged
	case deferAll:
		a.Outcome = meta.AttemptDeferred
	case perMessage:
		a.Outcome = meta.AttemptSettled
	case throttled:
		a.Outcome, flow = meta.AttemptThrottled, flowThrottle
	default:
		a.Outcome, flow = meta.AttemptFailed, flowFailure
		if v.SlowDown {
			flow = flowThrottle
		}
	}
	if v.ErrClass != "" {
		p.m.errors.WithLabelValues(v.ErrClass).Inc()
	}
	p.m.batches.WithLabelValues(a.Outcome).Inc()
	w.recordHealth(sub, v, res.status, flow, now)
	if v.ErrClass != "" {
		p.log.Info("push attempt failed", "queue", w.qid.String(), "host", hostOf(sub.Endpoint), "attempt_id", r.attemptID,
			"status", res.status, "error", v.ErrClass, "detail", v.Detail, "messages", len(r.msgIDs))
	}
	return flow, &attempt{sub: sub.ID, a: a}
}

func hostOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Host
}

// errClass names a transport failure.
func errClass(err error) string {
	var ne net.Error
	var cve *tls.CertificateVerificationError
	var uae x509.UnknownAuthorityError
	var hne x509.HostnameError
	var ci x509.CertificateInvalidError
	var rhe tls.RecordHeaderError
	var ae tls.AlertError
	switch {
	case errors.Is(err, endpoint.ErrBlockedAddress):
		return ErrBlocked
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ErrTimeout
	case errors.As(err, &cve), errors.As(err, &uae), errors.As(err, &hne), errors.As(err, &ci), errors.As(err, &rhe), errors.As(err, &ae):
		return ErrTLS
	}
	return ErrConnection
}

func errDetail(err error, class string) string {
	switch class {
	case ErrTimeout:
		return "no complete response within the push timeout"
	case ErrBlocked:
		return "the endpoint resolved to a non-public address"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // without the URL, which may carry secrets in its query
	}
	return truncate(err.Error(), 200)
}

// pushReplayOf is a replayed message's origin as a push carries it.
func pushReplayOf(r *engine.ReplayOf) *webhook.ReplayOf {
	if r == nil {
		return nil
	}
	return &webhook.ReplayOf{Topic: r.Topic.String(), Sequence: r.Sequence}
}

// setToken adds the bearer JWT of a subscription with auth type "oidc".
func (w *worker) setToken(ctx context.Context, req *http.Request, sub meta.Subscription, queueName string) error {
	if sub.AuthType != meta.AuthOIDC {
		return nil
	}
	if w.p.cfg.Tokens == nil {
		return errors.New("push token: this pusher has no signing key ring (QUEUES_PUBLIC_URL)")
	}
	tok, err := w.p.cfg.Tokens.Token(ctx, sub.TokenAudience(), meta.TokenSubject(sub.ProjectID, queueName))
	if err != nil {
		return fmt.Errorf("push token: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}
