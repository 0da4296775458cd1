package pusher

import (
	"context"
	"net/http"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/sdk/go/webhook"
)

// The reading of a receiver's answer is package webhook's (shared with `queues listen`);
// these are the pusher's names for it.

// MaxResponseBytes is how much of a response the pusher reads (docs/push.md).
const MaxResponseBytes = webhook.MaxResponseBytes

// Outcomes of one message, as a receiver names them in results.
const (
	OutcomeAck        = webhook.OutcomeAck
	OutcomeRetry      = webhook.OutcomeRetry
	OutcomeDeadLetter = webhook.OutcomeDeadLetter
	OutcomeDefer      = webhook.OutcomeDefer
	// OutcomeCancel returns the message without counting the delivery
	// (docs/delivery-options.md#cancel).
	OutcomeCancel = webhook.OutcomeCancel
)

// Error classes of a failed attempt (the attempts log and the endpoint-error metric).
const (
	ErrHTTPStatus      = webhook.ClassHTTPStatus
	ErrInvalidResponse = webhook.ClassInvalidResponse
	ErrTimeout         = webhook.ClassTimeout
	ErrConnection      = webhook.ClassConnection
	ErrTLS             = webhook.ClassTLS
	ErrBlocked         = webhook.ClassBlocked
)

// MessageResult is one entry of a receiver's results.
type MessageResult = webhook.Result

type verdict = webhook.Verdict

const (
	ackAll     = webhook.AckAll
	deferAll   = webhook.DeferAll
	perMessage = webhook.PerMessage
	throttled  = webhook.Throttled
	failed     = webhook.Failed
)

func classify(status int, h http.Header, body []byte, overflow bool, batch map[string]bool, now time.Time) verdict {
	return webhook.Classify(status, h, body, overflow, batch, now)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// settleMessages applies a verdict to the batch through the engine. A batch of an at-most-once queue
// left the queue when it was received: whatever the answer, there is nothing to settle.
func (w *worker) settleMessages(q queueInfo, batch []engine.Received, v verdict, receivedAt time.Time) {
	if q.eq.AtMostOnce {
		return
	}
	p := w.p
	now := p.cfg.Clock.Now()
	// A message stays in flight at most engine.MaxInFlight from its receive.
	limit := receivedAt.Add(engine.MaxInFlight).Sub(now) - time.Second
	delay := func(d time.Duration) time.Duration { return max(min(d, limit, engine.MaxVisibility), 0) }
	var acks []engine.Delivery
	var changes []engine.VisibilityChange
	var dls []engine.DeadLetterRequest
	var cancels, throttles []engine.Delivery
	deferred := 0
	for _, m := range batch {
		switch v.Kind {
		case ackAll:
			acks = append(acks, m.Delivery)
		case deferAll:
			deferred++
		case throttled:
			// Not the receiver's refusal: returned uncounted after the wait it asked for
			// (bounded by maxCancels, beyond which it counts: engine.CancelAfter).
			throttles = append(throttles, m.Delivery)
		case failed:
			changes = append(changes, engine.VisibilityChange{Delivery: m.Delivery, Visibility: delay(Backoff(m.ReceiveCount, p.cfg.RandN))})
		case perMessage:
			r, listed := v.Results[m.MessageID.String()]
			switch {
			case !listed || r.Outcome == OutcomeAck:
				acks = append(acks, m.Delivery)
			case r.Outcome == OutcomeDefer:
				deferred++
			case r.Outcome == OutcomeCancel:
				cancels = append(cancels, m.Delivery)
			case r.Outcome == OutcomeDeadLetter:
				dls = append(dls, engine.DeadLetterRequest{Delivery: m.Delivery, Reason: r.Reason})
			default: // retry
				d := time.Duration(0)
				if r.RetryAfterSeconds != nil {
					d = delay(time.Duration(*r.RetryAfterSeconds) * time.Second)
				}
				changes = append(changes, engine.VisibilityChange{Delivery: m.Delivery, Visibility: d})
			}
		}
	}
	ctx, cancel := context.WithTimeout(p.ioCtx, 10*time.Second)
	defer cancel()
	report := func(op string, errs []error, err error) int {
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("settling pushed messages failed; they return at their deadline", "op", op, "queue", w.qid.String(), "err", err)
			}
			return 0
		}
		ok := 0
		for _, e := range errs {
			if e == nil {
				ok++
			}
		}
		return ok
	}
	if len(acks) > 0 {
		errs, err := p.cfg.Engine.Ack(ctx, q.eq, acks)
		p.m.messages.WithLabelValues(mAcknowledged).Add(float64(report("ack", errs, err)))
	}
	if len(changes) > 0 {
		errs, err := p.cfg.Engine.ChangeVisibility(ctx, q.eq, changes)
		p.m.messages.WithLabelValues(mRetried).Add(float64(report("retry", errs, err)))
	}
	if len(dls) > 0 {
		errs, err := p.cfg.Engine.DeadLetter(ctx, q.eq, dls)
		p.m.messages.WithLabelValues(mDeadLettered).Add(float64(report("dead-letter", errs, err)))
	}
	if len(cancels) > 0 {
		errs, err := p.cfg.Engine.Cancel(ctx, q.eq, cancels)
		p.m.messages.WithLabelValues(mCancelled).Add(float64(report("cancel", errs, err)))
	}
	if len(throttles) > 0 {
		errs, err := p.cfg.Engine.CancelAfter(ctx, q.eq, throttles, delay(v.RetryAfter))
		p.m.messages.WithLabelValues(mThrottled).Add(float64(report("throttle", errs, err)))
	}
	p.m.messages.WithLabelValues(mDeferred).Add(float64(deferred))
}
