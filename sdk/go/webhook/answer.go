package webhook

// What a push's answer means (docs/push.md): the one reading of a receiver's response, shared by
// the pusher and `queues listen`, and the backoff after a failed push.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxResponseBytes is how much of a response the pusher reads (docs/push.md).
const MaxResponseBytes = 64 << 10

// Outcomes of one message, as a receiver names them in results.
const (
	OutcomeAck        = "ack"
	OutcomeRetry      = "retry"
	OutcomeDeadLetter = "dead-letter"
	OutcomeDefer      = "defer"
	// OutcomeCancel returns the message without counting the delivery
	// (docs/delivery-options.md#cancel).
	OutcomeCancel = "cancel"
)

// Error classes of a failed push (the attempts log and the pusher's endpoint-error metric).
const (
	ClassHTTPStatus      = "http_status"
	ClassInvalidResponse = "invalid_response"
	ClassTimeout         = "timeout"
	ClassConnection      = "connection_error"
	ClassTLS             = "tls_error"
	ClassBlocked         = "blocked_address"
)

// MaxRetryAfter bounds a Retry-After or retryAfterSeconds (a message stays in flight at most
// 12 hours from its receive; the settlement clamps again to what is left).
const MaxRetryAfter = 12 * time.Hour

// Result is one entry of a receiver's results.
type Result struct {
	MessageID         string `json:"messageId"`
	Outcome           string `json:"outcome"`
	RetryAfterSeconds *int64 `json:"retryAfterSeconds,omitempty"`
	Reason            string `json:"reason,omitempty"`
}

// VerdictKind is what a response means for the whole batch.
type VerdictKind int

const (
	AckAll     VerdictKind = iota // every message acknowledged
	DeferAll                      // every message left in flight for the receiver
	PerMessage                    // results name outcomes; unlisted ones are acknowledged
	Throttled                     // 429/503 with Retry-After: every message retried after it
	Failed                        // every message retried after a backoff
)

// Verdict is what one response (or the lack of one) means for the batch.
type Verdict struct {
	Kind       VerdictKind
	Results    map[string]Result // PerMessage
	RetryAfter time.Duration     // Throttled
	ErrClass   string            // Failed and Throttled
	Detail     string            // a short explanation for the attempts log
	SlowDown   bool              // halve the subscription's in-flight batches
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// ParseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return min(time.Duration(min(n, int64(MaxRetryAfter/time.Second)))*time.Second, MaxRetryAfter), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), MaxRetryAfter), true
	}
	return 0, false
}

// Classify reads a response: status, headers, and at most MaxResponseBytes of body (overflow
// tells whether there was more). batch holds the message ids pushed.
func Classify(status int, h http.Header, body []byte, overflow bool, batch map[string]bool, now time.Time) Verdict {
	switch {
	case status >= 200 && status < 300:
		ct := h.Get("Content-Type")
		empty := len(bytes.TrimSpace(body)) == 0 && !overflow
		if empty || !isJSON(ct) {
			switch status {
			case http.StatusOK, http.StatusCreated, http.StatusNoContent:
				return Verdict{Kind: AckAll}
			case http.StatusAccepted:
				return Verdict{Kind: DeferAll}
			}
			return Verdict{Kind: Failed, ErrClass: ClassHTTPStatus, Detail: fmt.Sprintf("status %d without results", status)}
		}
		if overflow {
			return Verdict{Kind: Failed, ErrClass: ClassInvalidResponse, Detail: fmt.Sprintf("JSON response over %d bytes", MaxResponseBytes)}
		}
		results, err := ParseResults(body, batch)
		if err != nil {
			return Verdict{Kind: Failed, ErrClass: ClassInvalidResponse, Detail: err.Error()}
		}
		return Verdict{Kind: PerMessage, Results: results}
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		if d, ok := ParseRetryAfter(h.Get("Retry-After"), now); ok {
			return Verdict{Kind: Throttled, RetryAfter: d, ErrClass: ClassHTTPStatus, Detail: fmt.Sprintf("status %d, Retry-After %s", status, d), SlowDown: true}
		}
		return Verdict{Kind: Failed, ErrClass: ClassHTTPStatus, Detail: fmt.Sprintf("status %d without Retry-After", status), SlowDown: true}
	default:
		return Verdict{Kind: Failed, ErrClass: ClassHTTPStatus, Detail: fmt.Sprintf("status %d", status)}
	}
}

// ParseResults reads {"results":[…]}: nothing else at the top level, each entry with a
// messageId of the batch (once), a known outcome, retryAfterSeconds only with retry (0 to 12 h)
// and reason only with dead-letter (at most 256 characters of valid UTF-8).
func ParseResults(body []byte, batch map[string]bool) (map[string]Result, error) {
	var doc struct {
		Results *[]Result `json:"results"`
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
	out := make(map[string]Result, len(*doc.Results))
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
			if *r.RetryAfterSeconds < 0 || *r.RetryAfterSeconds > int64(MaxRetryAfter/time.Second) {
				return nil, fmt.Errorf("results[%d].retryAfterSeconds must be 0 to %d", i, int64(MaxRetryAfter/time.Second))
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

// Backoff bounds (docs/push.md).
const (
	backoffUnit = time.Second
	backoffCap  = 10 * time.Minute
)

// Backoff is how long a message waits after a failed push on its attempt-th delivery
// (attempt = its receiveCount, 1 for the first): base = min(1 s × 2^(attempt−1), 10 min), and
// the wait is base/2 + random(0, base/2). randN(n) returns a uniform value in [0, n].
func Backoff(attempt int, randN func(n int64) int64) time.Duration {
	base := backoffUnit
	for i := 1; i < attempt && base < backoffCap; i++ {
		base *= 2
	}
	base = min(base, backoffCap)
	half := base / 2
	return half + time.Duration(randN(int64(base-half)))
}
