package enginetest

import (
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// A message id's delivery attempts never repeat across dead-letters and moves (issue 31):
// each queue's receiveCount starts again at 0, but the attempt a receipt handle names goes on
// growing, so the handle of a consumer that lost its delivery (a zombie) never settles the
// delivery of the same message after it came back to the queue.
func attemptTests() []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"AttemptsCarryOverDeadLetter", func(t *testing.T, s *suite) { forTypes(t, s, testAttemptsDeadLetter) }},
		{"AttemptsCarryOverMove", func(t *testing.T, s *suite) { forTypes(t, s, testAttemptsMove) }},
	}
}

// forTypes runs fn on a standard and on a fifo queue (its options and a send of one body).
func forTypes(t *testing.T, s *suite, fn func(t *testing.T, s *suite, typ queueOpt, send func(engine.Queue, string))) {
	fn(t, s, func(*engine.Queue) {}, func(q engine.Queue, body string) { s.send(q, body) })
	fn(t, s, fifo, func(q engine.Queue, body string) { s.sendG(q, "g", body) })
}

// wantLater checks a delivery of a message that came back: receiveCount restarted, attempt
// beyond every earlier one.
func wantLater(t *testing.T, what string, m engine.Received, earlier ...engine.Received) {
	t.Helper()
	if m.ReceiveCount != 1 {
		t.Fatalf("%s: receiveCount %d, want 1 (restarted)", what, m.ReceiveCount)
	}
	for _, e := range earlier {
		if m.MessageID != e.MessageID {
			t.Fatalf("%s: message %s, want %s", what, m.MessageID, e.MessageID)
		}
		if m.Attempt <= e.Attempt {
			t.Fatalf("%s: attempt %d, not beyond the earlier attempt %d: its handles repeat", what, m.Attempt, e.Attempt)
		}
	}
}

// testAttemptsMove is issue 31's zombie: received (visibility 1 s), dead-lettered at the next
// receive (maxReceiveCount 1), moved back, received again; the first handle must be stale.
func testAttemptsMove(t *testing.T, s *suite, typ queueOpt, send func(engine.Queue, string)) {
	dlq := s.queue(typ)
	q := s.queue(typ, withRedrive(dlq, 1))
	send(q, "zombie")
	first := s.receiveOne(q, time.Second)
	s.clk.Advance(time.Second)
	s.receiveNone(q) // redriven: received maxReceiveCount times
	s.wantCounts(dlq, 1, 0, 0)
	if moved, _ := s.moveAll(dlq, "back", 10, to(q)); moved != 1 {
		t.Fatalf("moved %d, want 1", moved)
	}
	again := s.receiveOne(q, time.Second)
	wantLater(t, "received after the move back", again, first)
	wantStale(t, "the zombie's ack of its first handle", s.ack(q, first.Delivery)[0])
	s.wantCounts(q, 0, 1, 0)

	// maxReceiveCount counts from the move: the next receive redrives it again, and once more
	// back, its attempts still go on.
	s.clk.Advance(time.Second)
	s.receiveNone(q)
	inDLQ := s.receiveOne(dlq, time.Minute)
	wantLater(t, "received in the dead-letter queue the second time", inDLQ, first, again)
	wantNil(t, "release in the dead-letter queue", s.changeVis(dlq, inDLQ.Delivery, 0))
	if moved, _ := s.moveAll(dlq, "back2", 10, to(q)); moved != 1 {
		t.Fatalf("second move: moved %d, want 1", moved)
	}
	last := s.receiveOne(q, time.Minute)
	wantLater(t, "received after the second move back", last, first, again, inDLQ)
	for _, old := range []engine.Received{first, again} {
		wantStale(t, "ack of an earlier handle", s.ack(q, old.Delivery)[0])
	}
	s.wantCounts(q, 0, 1, 0)
	wantNil(t, "ack of the current handle", s.ack(q, last.Delivery)[0])
	s.wantCounts(q, 0, 0, 0)
}

// testAttemptsDeadLetter: a consumer dead-letters a message, it is received in the dead-letter
// queue, moved back, dead-lettered again: the dead-letter queue's first handle must be stale.
func testAttemptsDeadLetter(t *testing.T, s *suite, typ queueOpt, send func(engine.Queue, string)) {
	dlq := s.queue(typ)
	q := s.queue(typ, withRedrive(dlq, 5))
	send(q, "twice dead")
	inQ := s.receiveOne(q, time.Minute)
	wantNil(t, "dead-letter", s.deadLetter(q, inQ.Delivery, "bad"))
	inDLQ := s.receiveOne(dlq, time.Minute)
	wantLater(t, "received in the dead-letter queue", inDLQ, inQ)
	wantNil(t, "release in the dead-letter queue", s.changeVis(dlq, inDLQ.Delivery, 0))
	if moved, _ := s.moveAll(dlq, "back", 10, to(q)); moved != 1 {
		t.Fatalf("moved %d, want 1", moved)
	}
	back := s.receiveOne(q, time.Minute)
	wantLater(t, "received after the move back", back, inQ, inDLQ)
	wantStale(t, "ack of the first handle after the move back", s.ack(q, inQ.Delivery)[0])
	wantNil(t, "dead-letter again", s.deadLetter(q, back.Delivery, "bad again"))
	again := s.receiveOne(dlq, time.Minute)
	wantLater(t, "received in the dead-letter queue again", again, inQ, inDLQ, back)
	wantStale(t, "the dead-letter queue's first handle", s.ack(dlq, inDLQ.Delivery)[0])
	s.wantCounts(dlq, 0, 1, 0)
	wantNil(t, "ack of the current handle", s.ack(dlq, again.Delivery)[0])
	s.wantCounts(dlq, 0, 0, 0)
}
