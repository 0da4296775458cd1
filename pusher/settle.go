package pusher

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

// MaxResponseBytes is how much of a response the pusher reads (SPEC §6).
const MaxResponseBytes = 64 << 10

// Outcomes of one message, as a receiver names them in results.
const (
	OutcomeAck        = "ack"
	OutcomeRetry      = "retry"
	OutcomeDeadLetter = "dead-letter"
	OutcomeDefer      = "defer"
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
		case OutcomeAck, OutcomeRetry, OutcomeDeadLetter, OutcomeDefer:
		default:
			return nil, fmt.Errorf("results[%d].outcome %q is not ack, retry, dead-letter or defer", i, truncate(r.Outcome, 32))
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
