package meta

import (
	"context"
	"time"

	"github.com/queueshq/queues/pkg/ids"
)

// Endpoint health (issue 37): the pusher records the outcome of every push attempt of a
// subscription in a HealthLog, the API shows the figures (GET …/subscription's health), and
// the pusher disables a subscription whose every attempt has failed for its
// DisableAfterSeconds. The record is bucketed so it stays small whatever the push rate:
// one-minute buckets for the last 5 minutes, one-hour buckets for the last 24 hours.

// Health windows and their buckets.
const (
	HealthShortWindow = 5 * time.Minute
	HealthLongWindow  = 24 * time.Hour
	healthShortBucket = time.Minute
	healthLongBucket  = time.Hour
)

// HealthOutcome is one push attempt as health counts it.
type HealthOutcome struct {
	At time.Time
	// OK is true when the endpoint answered 2xx (acknowledged, deferred or settled per
	// message); anything else, throttles included, is a failure.
	OK bool
	// Status is the HTTP status (0: no response); Error the error class and Message its
	// explanation, both empty when OK.
	Status  int
	Error   string
	Message string
	// FlowLimit is the subscription's flow-control limit (batches in flight) after the
	// attempt; ThrottledUntil, when not zero, is when the endpoint's Retry-After ends.
	FlowLimit      int
	ThrottledUntil time.Time
}

// HealthBucket counts attempts that started in [Start, Start+bucket width).
type HealthBucket struct {
	Start  int64 `json:"s"` // unix seconds
	OK     int64 `json:"ok"`
	Failed int64 `json:"f"`
}

// HealthError is the last failed attempt.
type HealthError struct {
	Status  int       `json:"status,omitempty"`
	Error   string    `json:"error,omitempty"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
}

// Health is a subscription's health record, as stored.
type Health struct {
	Minutes       []HealthBucket `json:"m,omitempty"`
	Hours         []HealthBucket `json:"h,omitempty"`
	LastSuccessAt time.Time      `json:"lastOk,omitzero"`
	LastError     *HealthError   `json:"lastErr,omitempty"`
	// ConsecutiveFailures counts failed attempts since the last success (or resume);
	// FailingSince is the first of them (zero while the last attempt succeeded).
	ConsecutiveFailures int64     `json:"consec,omitempty"`
	FailingSince        time.Time `json:"since,omitzero"`
	FlowLimit           int       `json:"limit,omitempty"`
	ThrottledUntil      time.Time `json:"until,omitzero"`
}

// Add counts one outcome into the record and drops buckets out of both windows.
func (h *Health) Add(o HealthOutcome) {
	h.Minutes = addBucket(h.Minutes, o, healthShortBucket, HealthShortWindow)
	h.Hours = addBucket(h.Hours, o, healthLongBucket, HealthLongWindow)
	h.FlowLimit, h.ThrottledUntil = o.FlowLimit, o.ThrottledUntil.UTC()
	if o.OK {
		h.LastSuccessAt = o.At.UTC()
		h.ConsecutiveFailures, h.FailingSince = 0, time.Time{}
		return
	}
	h.LastError = &HealthError{Status: o.Status, Error: o.Error, Message: o.Message, At: o.At.UTC()}
	if h.ConsecutiveFailures == 0 {
		h.FailingSince = o.At.UTC()
	}
	h.ConsecutiveFailures++
}

// AddAll counts outcomes in order (Add each).
func (h *Health) AddAll(os []HealthOutcome) {
	for _, o := range os {
		h.Add(o)
	}
}

// ResetFailures starts a new failure window (a disabled subscription resumed): failures
// before it no longer count toward disabling. The rates and the last error stay.
func (h *Health) ResetFailures() { h.ConsecutiveFailures, h.FailingSince = 0, time.Time{} }

// FailingFor is how long every attempt has failed, at now (0 when the last one succeeded).
func (h *Health) FailingFor(now time.Time) time.Duration {
	if h.ConsecutiveFailures == 0 || h.FailingSince.IsZero() {
		return 0
	}
	return now.Sub(h.FailingSince)
}

// Rate returns the attempts that succeeded and failed within window of now (the short or the
// long one), by whole buckets.
func (h *Health) Rate(now time.Time, window time.Duration) (ok, failed int64) {
	bs, width := h.Minutes, healthShortBucket
	if window > HealthShortWindow {
		bs, width = h.Hours, healthLongBucket
	}
	from := bucketStart(now, width) - int64((window-width)/time.Second)
	for _, b := range bs {
		if b.Start >= from {
			ok += b.OK
			failed += b.Failed
		}
	}
	return ok, failed
}

func bucketStart(t time.Time, width time.Duration) int64 {
	return t.Truncate(width).Unix()
}

// addBucket counts o into its bucket of width and drops buckets older than window.
func addBucket(bs []HealthBucket, o HealthOutcome, width, window time.Duration) []HealthBucket {
	start := bucketStart(o.At, width)
	from := start - int64((window-width)/time.Second)
	out := bs[:0]
	found := false
	for _, b := range bs {
		if b.Start < from {
			continue
		}
		if b.Start == start {
			found = true
			countInto(&b, o.OK)
		}
		out = append(out, b)
	}
	if !found {
		b := HealthBucket{Start: start}
		countInto(&b, o.OK)
		out = append(out, b)
	}
	return out
}

func countInto(b *HealthBucket, ok bool) {
	if ok {
		b.OK++
	} else {
		b.Failed++
	}
}

// HealthLog keeps each subscription's health record: the pusher records, the API reads and
// resets. Implementations: pushlog (a deployment: shared by the API and the pusher fleet),
// embeddedmeta (queues serve), memmeta (one process). A subscription that never pushed reads
// as the zero Health.
type HealthLog interface {
	// RecordHealth counts outcomes, in the order given, in one change and returns the record
	// after them. The pusher folds a subscription's outcomes through one writer, so the
	// record sees them in the order the pushes were answered.
	RecordHealth(ctx context.Context, sub ids.ID, os ...HealthOutcome) (Health, error)
	// Health reads the record.
	Health(ctx context.Context, sub ids.ID) (Health, error)
	// ResetHealthFailures starts a new failure window (Health.ResetFailures).
	ResetHealthFailures(ctx context.Context, sub ids.ID) error
}
