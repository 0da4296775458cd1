package webhook

import (
	"net/http"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzPushResults: whatever an endpoint answers, the results parser never panics, and what it
// accepts only settles messages of the batch, each once, with a known outcome, a bounded
// retry delay and a short valid reason. Classify turns the same answer into a verdict without
// panicking, and never reads a body over the cap as an ack.
func FuzzPushResults(f *testing.F) {
	for _, s := range []string{
		`{"results":[{"messageId":"m1","outcome":"ack"},{"messageId":"m2","outcome":"retry","retryAfterSeconds":30}]}`,
		`{"results":[{"messageId":"m1","outcome":"dead-letter","reason":"poison"},{"messageId":"m2","outcome":"defer"}]}`,
		`{"results":[]}`, `{"results":null}`, `{"results":[{"messageId":"m1","outcome":"ack"},{"messageId":"m1","outcome":"ack"}]}`,
		`{"results":[{"messageId":"zz","outcome":"ack"}]}`, `{"ok":true}`, `[]`, ``, `{"results":[{"messageId":"m1","outcome":"retry","retryAfterSeconds":-1}]}`,
		`{"results":[{"messageId":"m1","outcome":"ack","reason":"x"}]} trailing`,
	} {
		f.Add([]byte(s), uint16(200), "application/json", false)
	}
	f.Add([]byte(""), uint16(503), "", false)
	f.Add([]byte(`{"results":[]}`), uint16(429), "application/json", true)
	batch := map[string]bool{"m1": true, "m2": true}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte, status uint16, contentType string, overflow bool) {
		if out, err := ParseResults(body, batch); err == nil {
			for id, r := range out {
				if !batch[id] || r.MessageID != id {
					t.Fatalf("settles %q, not of the batch", id)
				}
				switch r.Outcome {
				case OutcomeAck, OutcomeRetry, OutcomeDeadLetter, OutcomeDefer, OutcomeCancel:
				default:
					t.Fatalf("outcome %q", r.Outcome)
				}
				if r.RetryAfterSeconds != nil && (*r.RetryAfterSeconds < 0 || *r.RetryAfterSeconds > int64(MaxRetryAfter/time.Second)) {
					t.Fatalf("retryAfterSeconds %d", *r.RetryAfterSeconds)
				}
				if !utf8.ValidString(r.Reason) || utf8.RuneCountInString(r.Reason) > 256 {
					t.Fatalf("reason %q", r.Reason)
				}
			}
		}
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		h.Set("Retry-After", string(body[:min(len(body), 16)]))
		v := Classify(int(status), h, body, overflow, batch, now)
		settled := v.Kind == AckAll || v.Kind == DeferAll || v.Kind == PerMessage
		if settled && (status < 200 || status > 299) {
			t.Fatalf("status %d settled as %v", status, v.Kind)
		}
		if settled && overflow && isJSON(contentType) {
			t.Fatalf("a JSON answer over the cap settled as %v", v.Kind)
		}
		if d, ok := ParseRetryAfter(string(body[:min(len(body), 40)]), now); ok && (d < 0 || d > MaxRetryAfter) {
			t.Fatalf("Retry-After %q parsed to %v", body[:min(len(body), 40)], d)
		}
	})
}
