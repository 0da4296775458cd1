package enginetest

import (
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// Barrier messages (docs/delivery-options.md#barrier-messages): a barrier is delivered only once
// every message accepted before it has left the queue, and no message accepted after it is
// delivered until it has left.

func barrierTests(h Harness) []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"BarrierOrder", testBarrierOrder},
		{"BarrierLeaves", testBarrierLeaves},
		{"BarrierPurge", testBarrierPurge},
		{"BarrierCounts", testBarrierCounts},
		{"BarrierInBatch", testBarrierInBatch},
		{"BarrierHistory", func(t *testing.T, s *suite) { testBarrierHistory(t, h) }},
	}
}

func barrier(body string) engine.Message { return engine.Message{Body: body, Barrier: true} }

// wantOnly receives (max 10, visibility vis) and wants exactly the given bodies, in any order.
func (s *suite) wantOnly(q engine.Queue, vis time.Duration, want ...string) []engine.Received {
	s.t.Helper()
	got := s.receive(q, engine.MaxBatch, vis)
	b := bodies(got)
	slices.Sort(b)
	w := slices.Clone(want)
	slices.Sort(w)
	if !slices.Equal(b, w) {
		s.t.Fatalf("received %q, want %q", b, w)
	}
	return got
}

func byBody(ms []engine.Received, body string) engine.Received {
	for _, m := range ms {
		if m.Body == body {
			return m
		}
	}
	return engine.Received{}
}

func testBarrierOrder(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "a", "b")
	s.sendMsgs(q, barrier("B"))
	s.send(q, "c")
	got := s.wantOnly(q, time.Minute, "a", "b") // c waits behind B, B behind a and b
	wantNil(t, "ack a", s.ack(q, byBody(got, "a").Delivery)[0])
	s.receiveNone(q) // b is in flight: B still waits
	wantNil(t, "release b", s.changeVis(q, byBody(got, "b").Delivery, 0))
	b := s.wantOnly(q, time.Minute, "b")
	wantNil(t, "ack b", s.ack(q, b[0].Delivery)[0])
	s.wantOnly(q, time.Minute, "B")
	s.receiveNone(q) // c waits until B has left, not only until it is delivered
	s.clk.Advance(2 * time.Minute)
	bar := s.wantOnly(q, time.Minute, "B") // its deadline passed: B again, c still waits
	wantNil(t, "ack B", s.ack(q, bar[0].Delivery)[0])
	c := s.wantOnly(q, time.Minute, "c")
	wantNil(t, "ack c", s.ack(q, c[0].Delivery)[0])
	s.receiveNone(q)
	s.send(q, "d") // barrier mode is over: the default path again
	s.wantOnly(q, time.Minute, "d")
}

// testBarrierLeaves: messages before a barrier, and the barrier, leave by dead-letter and by
// expiry as well as by acknowledgement; two barriers in a row each wait for the other.
func testBarrierLeaves(t *testing.T, s *suite) {
	dlq := s.queue()
	q := s.queue(withRedrive(dlq, 5), withRetention(time.Hour))
	s.send(q, "a")
	s.sendMsgs(q, barrier("B1"))
	s.sendMsgs(q, barrier("B2"))
	s.send(q, "c")
	a := s.wantOnly(q, time.Minute, "a")
	wantNil(t, "dead-letter a", s.deadLetter(q, a[0].Delivery, ""))
	b1 := s.wantOnly(q, time.Minute, "B1")
	wantNil(t, "dead-letter B1", s.deadLetter(q, b1[0].Delivery, ""))
	s.wantOnly(q, time.Minute, "B2") // leaves by expiry: retention 1 h, never settled
	s.clk.Advance(30 * time.Minute)
	s.send(q, "late") // accepted after B2: waits for it
	s.clk.Advance(31 * time.Minute)
	if err := s.e.Sweep(s.ctx, []engine.Queue{q}); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	// B2 and c expired (sent more than an hour ago); late is what is left.
	s.wantOnly(q, time.Minute, "late")
}

func testBarrierPurge(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "a")
	s.sendMsgs(q, barrier("B"))
	s.send(q, "c")
	s.wantOnly(q, time.Minute, "a")
	if err := s.e.Purge(s.ctx, q); err != nil {
		t.Fatalf("Purge: %v", err)
	}
	s.wantCounts(q, 0, 0, 0)
	s.send(q, "d")
	s.wantOnly(q, time.Minute, "d")
}

// testBarrierCounts: messages waiting behind a barrier count as delayed.
func testBarrierCounts(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "a")
	s.sendMsgs(q, barrier("B"))
	s.send(q, "c", "d")
	s.wantCounts(q, 1, 0, 3)
	got := s.wantOnly(q, time.Minute, "a")
	s.wantCounts(q, 0, 1, 3)
	wantNil(t, "ack a", s.ack(q, got[0].Delivery)[0])
	s.wantOnly(q, time.Minute, "B")
	s.wantCounts(q, 0, 1, 2)
}

// testBarrierInBatch: a batch's order is its acceptance order.
func testBarrierInBatch(t *testing.T, s *suite) {
	q := s.queue()
	s.sendMsgs(q, engine.Message{Body: "a"}, barrier("B"), engine.Message{Body: "c"})
	a := s.wantOnly(q, time.Minute, "a")
	wantNil(t, "ack a", s.ack(q, a[0].Delivery)[0])
	b := s.wantOnly(q, time.Minute, "B")
	wantNil(t, "ack B", s.ack(q, b[0].Delivery)[0])
	s.wantOnly(q, time.Minute, "c")
}
