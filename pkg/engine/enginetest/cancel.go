package enginetest

import (
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// Cancel (docs/delivery-options.md#cancel): a cancelled delivery does not count, and maxCancels
// bounds how often.
func cancelTests() []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"CancelUncounted", func(t *testing.T, s *suite) { testCancelUncounted(t, s, engine.Standard) }},
		{"CancelUncountedFIFO", func(t *testing.T, s *suite) { testCancelUncounted(t, s, engine.FIFO) }},
		{"CancelMaxCancels", func(t *testing.T, s *suite) { testCancelMax(t, s, engine.Standard) }},
		{"CancelMaxCancelsFIFO", func(t *testing.T, s *suite) { testCancelMax(t, s, engine.FIFO) }},
		{"CancelNoRedriveDeletes", testCancelNoRedrive},
		{"CancelStaleHandle", testCancelStale},
		{"CancelKeepsPriority", testCancelPriority},
		{"CancelUnderRedrive", testCancelRedrive},
		{"CancelAfterWaitsUncounted", func(t *testing.T, s *suite) { testCancelAfter(t, s, engine.Standard) }},
		{"CancelAfterWaitsUncountedFIFO", func(t *testing.T, s *suite) { testCancelAfter(t, s, engine.FIFO) }},
		{"CancelAfterBeyondMaxCounts", func(t *testing.T, s *suite) { testCancelAfterBeyondMax(t, s, engine.Standard) }},
		{"CancelAfterBeyondMaxCountsFIFO", func(t *testing.T, s *suite) { testCancelAfterBeyondMax(t, s, engine.FIFO) }},
	}
}

func withMaxCancels(n int) queueOpt { return func(q *engine.Queue) { q.MaxCancels = n } }

func withType(t engine.Type) queueOpt { return func(q *engine.Queue) { q.Type = t } }

// sendTyped sends bodies, in one group on a fifo queue.
func (s *suite) sendTyped(q engine.Queue, bodies ...string) {
	s.t.Helper()
	msgs := make([]engine.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = engine.Message{Body: b}
		if q.Type == engine.FIFO {
			msgs[i].GroupID, msgs[i].DedupID = "g", b
		}
	}
	s.sendMsgs(q, msgs...)
}

func (s *suite) cancel(q engine.Queue, ds ...engine.Delivery) []error {
	s.t.Helper()
	errs, err := s.e.Cancel(s.ctx, q, ds)
	if err != nil {
		s.t.Fatalf("Cancel: %v", err)
	}
	if len(errs) != len(ds) {
		s.t.Fatalf("Cancel answered %d results for %d deliveries", len(errs), len(ds))
	}
	return errs
}

func testCancelUncounted(t *testing.T, s *suite, typ engine.Type) {
	q := s.queue(withType(typ), withMaxCancels(engine.DefaultMaxCancels))
	s.sendTyped(q, "m")
	first := s.receiveOne(q, time.Hour)
	w, stop := s.e.Watch(q.ID)
	defer stop()
	wantNil(t, "cancel", s.cancel(q, first.Delivery)[0])
	s.wantCounts(q, 1, 0, 0) // visible at once, no clock advance
	waitSignal(t, w, "cancel")
	wantNil(t, "cancel again, same delivery", s.cancel(q, first.Delivery)[0])
	again := s.receiveOne(q, time.Hour)
	if again.MessageID != first.MessageID || again.ReceiveCount != 1 {
		t.Fatalf("after a cancel received %s with receiveCount %d, want %s with 1", again.MessageID, again.ReceiveCount, first.MessageID)
	}
	wantStale(t, "ack with the cancelled handle after the next receive", s.ack(q, first.Delivery)[0])
	wantStale(t, "cancel with the cancelled handle after the next receive", s.cancel(q, first.Delivery)[0])
	wantNil(t, "release", s.changeVis(q, again.Delivery, 0))
	if third := s.receiveOne(q, time.Hour); third.ReceiveCount != 2 {
		t.Fatalf("after a release receiveCount %d, want 2 (the cancel stays uncounted)", third.ReceiveCount)
	}
}

func testCancelMax(t *testing.T, s *suite, typ engine.Type) {
	dlq := s.queue(withType(typ))
	q := s.queue(withType(typ), withMaxCancels(2), withRedrive(dlq, 5))
	s.sendTyped(q, "m")
	for i := range 2 {
		m := s.receiveOne(q, time.Hour)
		if m.ReceiveCount != 1 {
			t.Fatalf("receive %d: receiveCount %d, want 1", i+1, m.ReceiveCount)
		}
		wantNil(t, "cancel", s.cancel(q, m.Delivery)[0])
	}
	m := s.receiveOne(q, time.Hour)
	wantNil(t, "the cancel beyond maxCancels", s.cancel(q, m.Delivery)[0])
	s.wantCounts(q, 0, 0, 0)
	s.receiveNone(q)
	d := s.receiveOne(dlq, time.Minute)
	if d.MessageID != m.MessageID || d.DeadLetter == nil || d.DeadLetter.Reason != engine.CancelReason || d.DeadLetter.SourceQueue != q.ID {
		t.Fatalf("dead-letter queue gave %s with %+v, want %s with reason %q", d.MessageID, d.DeadLetter, m.MessageID, engine.CancelReason)
	}
	wantStale(t, "ack after the move", s.ack(q, m.Delivery)[0])
}

func testCancelNoRedrive(t *testing.T, s *suite) {
	q := s.queue(withMaxCancels(0))
	s.send(q, "m")
	m := s.receiveOne(q, time.Hour)
	wantNil(t, "cancel with maxCancels 0", s.cancel(q, m.Delivery)[0])
	s.wantCounts(q, 0, 0, 0)
	s.receiveNone(q)
}

// testCancelStale: a stale handle changes nothing, as with release.
func testCancelStale(t *testing.T, s *suite) {
	q := s.queue(withMaxCancels(1))
	s.send(q, "acked", "held")
	ms := s.receive(q, 2, time.Hour)
	if len(ms) != 2 {
		t.Fatalf("received %d, want 2", len(ms))
	}
	wantNil(t, "ack", s.ack(q, ms[0].Delivery)[0])
	errs := s.cancel(q, ms[0].Delivery, ms[1].Delivery)
	wantStale(t, "cancel after ack", errs[0])
	wantNil(t, "cancel in the same batch", errs[1])
	wantStale(t, "release after ack", s.changeVis(q, ms[0].Delivery, 0))
	again := s.receiveOne(q, time.Hour)
	wantStale(t, "cancel with a handle received again", s.cancel(q, ms[1].Delivery)[0])
	s.wantCounts(q, 0, 1, 0)
	if again.ReceiveCount != 1 {
		t.Fatalf("receiveCount %d, want 1", again.ReceiveCount)
	}
}

func testCancelPriority(t *testing.T, s *suite) {
	q := s.queue(withMaxCancels(5))
	s.sendMsgs(q, pmsg("low", 0), pmsg("high", 7))
	m := s.receiveOne(q, time.Hour)
	if m.Body != "high" {
		t.Fatalf("received %q first, want high", m.Body)
	}
	wantNil(t, "cancel", s.cancel(q, m.Delivery)[0])
	again := s.receiveOne(q, time.Hour)
	if again.Body != "high" || again.Priority != 7 {
		t.Fatalf("after a cancel received %q at priority %d, want high at 7", again.Body, again.Priority)
	}
}

// testCancelRedrive: cancelled deliveries do not count toward maxReceiveCount either.
func testCancelRedrive(t *testing.T, s *suite) {
	dlq := s.queue()
	q := s.queue(withMaxCancels(5), withRedrive(dlq, 1))
	s.send(q, "m")
	m := s.receiveOne(q, time.Hour)
	wantNil(t, "cancel", s.cancel(q, m.Delivery)[0])
	again := s.receiveOne(q, time.Hour) // one counted receive so far: not redriven
	wantNil(t, "release", s.changeVis(q, again.Delivery, 0))
	s.receiveNone(q) // now received maxReceiveCount times: moved at this receive
	s.wantCounts(dlq, 1, 0, 0)
}

func (s *suite) cancelAfter(q engine.Queue, d time.Duration, ds ...engine.Delivery) []error {
	s.t.Helper()
	errs, err := s.e.CancelAfter(s.ctx, q, ds, d)
	if err != nil {
		s.t.Fatalf("CancelAfter: %v", err)
	}
	if len(errs) != len(ds) {
		s.t.Fatalf("CancelAfter answered %d results for %d deliveries", len(errs), len(ds))
	}
	return errs
}

// testCancelAfter: a throttled push's messages wait out the delay, then come back uncounted.
func testCancelAfter(t *testing.T, s *suite, typ engine.Type) {
	q := s.queue(withType(typ), withMaxCancels(engine.DefaultMaxCancels))
	s.sendTyped(q, "m")
	first := s.receiveOne(q, time.Hour)
	wantNil(t, "cancel after 30 s", s.cancelAfter(q, 30*time.Second, first.Delivery)[0])
	s.receiveNone(q)
	s.clk.Advance(30*time.Second - time.Millisecond)
	s.receiveNone(q)
	s.clk.Advance(time.Millisecond)
	again := s.receiveOne(q, time.Hour)
	if again.MessageID != first.MessageID || again.ReceiveCount != 1 {
		t.Fatalf("after CancelAfter received %s with receiveCount %d, want %s with 1", again.MessageID, again.ReceiveCount, first.MessageID)
	}
}

// testCancelAfterBeyondMax: past maxCancels a throttle counts as a retry after the delay, and
// never dead-letters for max_cancels.
func testCancelAfterBeyondMax(t *testing.T, s *suite, typ engine.Type) {
	dlq := s.queue(withType(typ))
	q := s.queue(withType(typ), withMaxCancels(1), withRedrive(dlq, 5))
	s.sendTyped(q, "m")
	m := s.receiveOne(q, time.Hour)
	wantNil(t, "first CancelAfter", s.cancelAfter(q, time.Second, m.Delivery)[0])
	s.clk.Advance(time.Second)
	m = s.receiveOne(q, time.Hour)
	if m.ReceiveCount != 1 {
		t.Fatalf("after one uncounted CancelAfter receiveCount %d, want 1", m.ReceiveCount)
	}
	wantNil(t, "CancelAfter beyond maxCancels", s.cancelAfter(q, 10*time.Second, m.Delivery)[0])
	s.receiveNone(q)
	s.wantCounts(dlq, 0, 0, 0)
	s.clk.Advance(10 * time.Second)
	m = s.receiveOne(q, time.Hour)
	if m.ReceiveCount != 2 {
		t.Fatalf("after a CancelAfter beyond maxCancels receiveCount %d, want 2 (counted)", m.ReceiveCount)
	}
	s.wantCounts(dlq, 0, 0, 0)
}
