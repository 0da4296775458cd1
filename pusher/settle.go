package pusher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queueshq/queues/pkg/engine"
)

// MaxResponseBytes is how much of a response the pusher reads (SPEC §6).
const MaxResponseBytes = 64 << 10

// Outcomes of one message, as a receiver names them in results.
const (
	OutcomeAck        = "ack"
	OutcomeRetry      = "retry"
	OutcomeDeadLetter = "dead-letter"
	OutcomeDefer      = "defer"
	// OutcomeCancel returns the message without counting the delivery (SPEC §12).
	OutcomeCancel = "cancel"
)

// Error classes of a failed attempt (the attempts log and the endpoint-error metric).
const (
	ErrHTTPStatus      = "http_status"
	ErrInvalidResponse = "invalid_response"
	ErrTimeout         = "timeout"
	ErrConnection      = "connection_error"
	ErrTLS             = "tls_error"
	ErrBlocked         = "blocked_address"
)

// maxRetryAfter bounds a Retry-After or retryAfterSeconds (a message stays in flight at most
// 12 hours from its receive; the settlement clamps again to what is left).
const maxRetryAfter = 12 * time.Hour

// MessageResult is one entry of a receiver's results.
type MessageResult struct {
	MessageID         string `json:"messageId"`
	Outcome           string `json:"outcome"`
	RetryAfterSeconds *int64 `json:"retryAfterSeconds,omitempty"`
	Reason            string `json:"reason,omitempty"`
}

type verdictKind int

const (
	ackAll     verdictKind = iota // every message acknowledged
	deferAll                      // every message left in flight for the receiver
	perMessage                    // results name outcomes; unlisted ones are acknowledged
	throttled                     // 429/503 with Retry-After: every message retried after it
	failed                        // every message retried after a backoff
)

// verdict is what one response (or the lack of one) means for the batch.
type verdict struct {
	kind       verdictKind
	results    map[string]MessageResult // perMessage
	retryAfter time.Duration            // throttled
	errClass   string                   // failed and throttled
	detail     string                   // a short explanation for the attempts log
	slowDown   bool                     // halve the subscription's in-flight batches
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return min(time.Duration(min(n, int64(maxRetryAfter/time.Second)))*time.Second, maxRetryAfter), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter), true
	}
	return 0, false
}

// classify reads a response: status, headers, and at most MaxResponseBytes of body (overflow
// tells whether there was more). batch holds the message ids pushed.
func classify(status int, h http.Header, body []byte, overflow bool, batch map[string]bool, now time.Time) verdict {
	switch {
	case status >= 200 && status < 300:
		ct := h.Get("Content-Type")
		empty := len(bytes.TrimSpace(body)) == 0 && !overflow
		if empty || !isJSON(ct) {
			switch status {
			case http.StatusOK, http.StatusCreated, http.StatusNoContent:
				return verdict{kind: ackAll}
			case http.StatusAccepted:
				return verdict{kind: deferAll}
			}
			return verdict{kind: failed, errClass: ErrHTTPStatus, detail: fmt.Sprintf("status %d without results", status)}
		}
		if overflow {
			return verdict{kind: failed, errClass: ErrInvalidResponse, detail: fmt.Sprintf("JSON response over %d bytes", MaxResponseBytes)}
		}
		results, err := parseResults(body, batch)
		if err != nil {
			return verdict{kind: failed, errClass: ErrInvalidResponse, detail: err.Error()}
		}
		return verdict{kind: perMessage, results: results}
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		if d, ok := parseRetryAfter(h.Get("Retry-After"), now); ok {
			return verdict{kind: throttled, retryAfter: d, errClass: ErrHTTPStatus, detail: fmt.Sprintf("status %d, Retry-After %s", status, d), slowDown: true}
		}
		return verdict{kind: failed, errClass: ErrHTTPStatus, detail: fmt.Sprintf("status %d without Retry-After", status), slowDown: true}
	default:
		return verdict{kind: failed, errClass: ErrHTTPStatus, detail: fmt.Sprintf("status %d", status)}
	}
}

// parseResults reads {"results":[…]}: nothing else at the top level, each entry with a
// messageId of the batch (once), a known outcome, retryAfterSeconds only with retry (0 to 12 h)
// and reason only with dead-letter (at most 256 characters of valid UTF-8).
func parseResults(body []byte, batch map[string]bool) (map[string]MessageResult, error) {
	var doc struct {
		Results *[]MessageResult `json:"results"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a results document: %v", err)
	}
	if dec.More() {
		return nil, errors.New("data after the results document")
	}
	if doc.Results == nil {
		return nil, errors.New(`no "results" array`)
	}
	out := make(map[string]MessageResult, len(*doc.Results))
	for i, r := range *doc.Results {
		switch {
		case !batch[r.MessageID]:
			return nil, fmt.Errorf("results[%d].messageId %q is not in the batch", i, truncate(r.MessageID, 64))
		case out[r.MessageID].MessageID != "":
			return nil, fmt.Errorf("results[%d].messageId %q is listed twice", i, r.MessageID)
		}
		switch r.Outcome {
		case OutcomeAck, OutcomeRetry, OutcomeDeadLetter, OutcomeDefer, OutcomeCancel:
		default:
			return nil, fmt.Errorf("results[%d].outcome %q is not ack, retry, dead-letter, defer or cancel", i, truncate(r.Outcome, 32))
		}
		if r.RetryAfterSeconds != nil {
			if r.Outcome != OutcomeRetry {
				return nil, fmt.Errorf("results[%d].retryAfterSeconds goes only with retry", i)
			}
			if *r.RetryAfterSeconds < 0 || *r.RetryAfterSeconds > int64(maxRetryAfter/time.Second) {
				return nil, fmt.Errorf("results[%d].retryAfterSeconds must be 0 to %d", i, int64(maxRetryAfter/time.Second))
			}
		}
		if r.Reason != "" {
			if r.Outcome != OutcomeDeadLetter {
				return nil, fmt.Errorf("results[%d].reason goes only with dead-letter", i)
			}
			if !utf8.ValidString(r.Reason) || utf8.RuneCountInString(r.Reason) > 256 {
				return nil, fmt.Errorf("results[%d].reason must be at most 256 characters", i)
			}
		}
		out[r.MessageID] = r
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// settle applies a verdict to the batch through the engine. A batch of an at-most-once queue
// left the queue when it was received: whatever the answer, there is nothing to settle.
func (w *worker) settle(q queueInfo, batch []engine.Received, v verdict, receivedAt time.Time) {
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
	var cancels []engine.Delivery
	deferred := 0
	for _, m := range batch {
		switch v.kind {
		case ackAll:
			acks = append(acks, m.Delivery)
		case deferAll:
			deferred++
		case throttled:
			changes = append(changes, engine.VisibilityChange{Delivery: m.Delivery, Visibility: delay(v.retryAfter)})
		case failed:
			changes = append(changes, engine.VisibilityChange{Delivery: m.Delivery, Visibility: delay(Backoff(m.ReceiveCount, p.cfg.RandN))})
		case perMessage:
			r, listed := v.results[m.MessageID.String()]
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
	p.m.messages.WithLabelValues(mDeferred).Add(float64(deferred))
}
