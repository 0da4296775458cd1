package metatest

import (
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// RunHealth runs the conformance suite of meta.HealthLog; newLog returns a fresh, empty log.
func RunHealth(t *testing.T, newLog func(t *testing.T) meta.HealthLog) {
	t.Run("RecordAndRead", func(t *testing.T) { t.Parallel(); testHealthRecord(t, newLog(t)) })
	t.Run("Reset", func(t *testing.T) { t.Parallel(); testHealthReset(t, newLog(t)) })
	t.Run("SeveralInOrder", func(t *testing.T) { t.Parallel(); testHealthSeveral(t, newLog(t)) })
}

func failure(at time.Time, status int) meta.HealthOutcome {
	return meta.HealthOutcome{At: at, Status: status, Error: "http_status", Message: "status 500", FlowLimit: 3}
}

func testHealthRecord(t *testing.T, l meta.HealthLog) {
	sub := ids.New()
	h, err := l.Health(ctxOf(t), sub)
	must(t, err, "Health of a subscription that never pushed")
	if h.ConsecutiveFailures != 0 || !h.LastSuccessAt.IsZero() || h.LastError != nil {
		t.Fatalf("never pushed: %+v, want zero", h)
	}
	t0 := base.Truncate(time.Hour)
	_, err = l.RecordHealth(ctxOf(t), sub, meta.HealthOutcome{At: t0, OK: true, FlowLimit: 10})
	must(t, err, "record a success")
	for i := range 3 {
		h, err = l.RecordHealth(ctxOf(t), sub, failure(t0.Add(time.Duration(i+1)*time.Minute), 500))
		must(t, err, "record a failure")
	}
	if h.ConsecutiveFailures != 3 || !h.FailingSince.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after 3 failures: consecutive %d since %v, want 3 since %v", h.ConsecutiveFailures, h.FailingSince, t0.Add(time.Minute))
	}
	// Two hours later the minute buckets are gone, the hour buckets stay.
	later := t0.Add(2 * time.Hour)
	h, err = l.RecordHealth(ctxOf(t), sub, failure(later, 503))
	must(t, err, "record a later failure")
	read, err := l.Health(ctxOf(t), sub)
	must(t, err, "Health")
	if ok, failed := read.Rate(later, meta.HealthShortWindow); ok != 0 || failed != 1 {
		t.Fatalf("5-minute rate: %d ok, %d failed, want 0 and 1", ok, failed)
	}
	if ok, failed := read.Rate(later, meta.HealthLongWindow); ok != 1 || failed != 4 {
		t.Fatalf("24-hour rate: %d ok, %d failed, want 1 and 4", ok, failed)
	}
	if read.LastError == nil || read.LastError.Status != 503 || !read.LastError.At.Equal(later) || !read.LastSuccessAt.Equal(t0) {
		t.Fatalf("last error %+v, last success %v", read.LastError, read.LastSuccessAt)
	}
	if read.FailingFor(later) != 2*time.Hour-time.Minute || read.FlowLimit != 3 {
		t.Fatalf("failing for %v with limit %d, want %v and 3", read.FailingFor(later), read.FlowLimit, 2*time.Hour-time.Minute)
	}
	// A day later only the newest failure's hour is in the long window.
	h, err = l.RecordHealth(ctxOf(t), sub, meta.HealthOutcome{At: later.Add(24 * time.Hour), OK: true})
	must(t, err, "record a success a day later")
	if ok, failed := h.Rate(later.Add(24*time.Hour), meta.HealthLongWindow); ok != 1 || failed != 0 || h.ConsecutiveFailures != 0 || !h.FailingSince.IsZero() {
		t.Fatalf("a day later: %d ok, %d failed, consecutive %d since %v", ok, failed, h.ConsecutiveFailures, h.FailingSince)
	}
}

func testHealthReset(t *testing.T, l meta.HealthLog) {
	sub := ids.New()
	must(t, l.ResetHealthFailures(ctxOf(t), sub), "reset a subscription that never pushed")
	_, err := l.RecordHealth(ctxOf(t), sub, failure(base, 500))
	must(t, err, "record")
	must(t, l.ResetHealthFailures(ctxOf(t), sub), "reset")
	h, err := l.Health(ctxOf(t), sub)
	must(t, err, "Health")
	if h.ConsecutiveFailures != 0 || !h.FailingSince.IsZero() || h.LastError == nil {
		t.Fatalf("after a reset: %+v, want no failure window and the last error kept", h)
	}
	if _, failed := h.Rate(base, meta.HealthShortWindow); failed != 1 {
		t.Fatalf("after a reset the rate counts %d failures, want 1", failed)
	}
}

// testHealthSeveral records outcomes folded into one call: they count in the order given, so
// the last one decides the failure window, the throttle and the flow limit.
func testHealthSeveral(t *testing.T, l meta.HealthLog) {
	sub := ids.New()
	throttle := failure(base.Add(time.Second), 429)
	throttle.ThrottledUntil, throttle.FlowLimit = base.Add(time.Minute), 2
	h, err := l.RecordHealth(ctxOf(t), sub,
		failure(base, 500), throttle, meta.HealthOutcome{At: base.Add(2 * time.Second), OK: true, FlowLimit: 4})
	must(t, err, "record three outcomes")
	if h.ConsecutiveFailures != 0 || !h.LastSuccessAt.Equal(base.Add(2*time.Second)) || h.FlowLimit != 4 || !h.ThrottledUntil.IsZero() {
		t.Fatalf("after failure, throttle, success: %+v, want the success last", h)
	}
	if h.LastError == nil || h.LastError.Status != 429 {
		t.Fatalf("last error %+v, want the throttle's 429", h.LastError)
	}
	if ok, failed := h.Rate(base.Add(2*time.Second), meta.HealthShortWindow); ok != 1 || failed != 2 {
		t.Fatalf("5-minute rate: %d ok, %d failed, want 1 and 2", ok, failed)
	}
	h, err = l.RecordHealth(ctxOf(t), sub, throttle, failure(base.Add(3*time.Second), 503))
	must(t, err, "record two failures")
	if h.ConsecutiveFailures != 2 || !h.FailingSince.Equal(throttle.At.UTC()) || h.LastError.Status != 503 {
		t.Fatalf("after throttle, failure: consecutive %d since %v, last %+v", h.ConsecutiveFailures, h.FailingSince, h.LastError)
	}
}
