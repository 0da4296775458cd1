package enginetest

import (
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// Barrier messages (docs/delivery-options.md#barrier-messages) against every way a message becomes
// deliverable besides a plain send: a message accepted while a barrier is pending waits behind it
// whether it arrived by a keyed send, a dead-letter move, a redrive at receive or a move task, and
// a delay ending behind a barrier does not make it deliverable. Browse shows what waits behind a
// barrier as delayed, as the counts do.

func barrierPathTests() []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"BarrierDeadLetterInto", testBarrierDeadLetterInto},
		{"BarrierMoveInto", testBarrierMoveInto},
		{"BarrierKeyed", testBarrierKeyed},
		{"BarrierDelayedBehind", testBarrierDelayedBehind},
		{"BarrierBrowse", testBarrierBrowse},
	}
}

// settleOnly receives exactly want (any order) and acknowledges them.
func (s *suite) settleOnly(q engine.Queue, want ...string) {
	s.t.Helper()
	got := s.wantOnly(q, time.Minute, want...)
	for i, err := range s.ack(q, deliveries(got)...) {
		wantNil(s.t, "ack "+got[i].Body, err)
	}
}

// testBarrierDeadLetterInto: messages dead-lettered into a queue with a pending barrier, by
// their consumer or by a receive past maxReceiveCount, arrive after the barrier.
func testBarrierDeadLetterInto(t *testing.T, s *suite) {
	dlq := s.queue()
	q := s.queue(withRedrive(dlq, 1))
	s.send(dlq, "a")
	s.sendMsgs(dlq, barrier("B"))
	s.send(q, "x", "y")
	got := s.wantOnly(q, time.Second, "x", "y")
	wantNil(t, "dead-letter x", s.deadLetter(q, byBody(got, "x").Delivery, ""))
	s.clk.Advance(2 * time.Second) // y's deadline passes: the next receive redrives it
	s.receiveNone(q)
	s.wantCounts(dlq, 1, 0, 3) // B, x and y wait behind a
	s.settleOnly(dlq, "a")
	s.settleOnly(dlq, "B")
	s.settleOnly(dlq, "x", "y")
}

// testBarrierMoveInto: messages a move task brings into a queue with a pending barrier, to
// a named destination or back to their source, arrive after the barrier.
func testBarrierMoveInto(t *testing.T, s *suite) {
	dlq := s.queue()
	src := s.queue(withRedrive(dlq, 5))
	dst := s.queue()
	s.send(dlq, "m1", "m2")
	s.send(src, "r")
	r := s.wantOnly(src, time.Minute, "r")
	wantNil(t, "dead-letter r", s.deadLetter(src, r[0].Delivery, ""))
	s.send(dst, "a")
	s.sendMsgs(dst, barrier("B"))
	s.send(src, "s")
	s.sendMsgs(src, barrier("C"))
	if moved, failed := s.moveAll(dlq, "t", 10, func(m engine.BrowsedMessage) (*engine.Queue, bool) {
		if m.Body == "r" {
			return &src, false // back to its source
		}
		return &dst, false
	}); moved != 3 || failed != 0 {
		t.Fatalf("moved %d, failed %d; want 3, 0", moved, failed)
	}
	s.settleOnly(dst, "a")
	s.settleOnly(dst, "B")
	s.settleOnly(dst, "m1", "m2")
	s.settleOnly(src, "s")
	s.settleOnly(src, "C")
	s.settleOnly(src, "r")
}

// testBarrierKeyed: a keyed send accepted while a barrier is pending neither changes a
// message accepted before the barrier nor is delivered before it: it is stored as a message
// of its own, behind the barrier, and not conflated while it waits there.
func testBarrierKeyed(t *testing.T, s *suite) {
	q := s.queue()
	v1 := s.sendKeyed(q, []bool{false}, keyedMsg("K", "v1", engine.MergeReplace, nil))
	s.sendMsgs(q, barrier("B"))
	v2 := s.sendKeyed(q, []bool{false, false}, keyedMsg("K", "v2", engine.MergeReplace, nil), keyedMsg("J", "j1", engine.MergeReplace, nil))
	s.sendKeyed(q, []bool{false}, keyedMsg("J", "j2", engine.MergeReplace, nil))
	if v2[0] == v1[0] {
		t.Fatalf("keyed send behind a barrier answered the waiting message %s", v1[0])
	}
	s.wantCounts(q, 1, 0, 4)
	s.settleOnly(q, "v1")
	s.settleOnly(q, "B")
	s.settleOnly(q, "v2", "j1", "j2")
	s.receiveNone(q)
	// The barrier has left: keyed sends conflate again.
	a := s.sendKeyed(q, []bool{false}, keyedMsg("K", "v3", engine.MergeReplace, nil))
	b := s.sendKeyed(q, []bool{true}, keyedMsg("K", "v4", engine.MergeReplace, nil))
	if a[0] != b[0] {
		t.Fatalf("merged send answered %s, want %s", b[0], a[0])
	}
	s.settleOnly(q, "v4")
}

// testBarrierDelayedBehind: a delayed message sent after a barrier stays behind it when its
// delay ends; one sent before it holds the barrier back until it has left.
func testBarrierDelayedBehind(t *testing.T, s *suite) {
	q := s.queue()
	d := 10 * time.Second
	s.sendMsgs(q, engine.Message{Body: "early", Delay: &d})
	s.sendMsgs(q, barrier("B"))
	s.sendMsgs(q, engine.Message{Body: "late", Delay: &d}, engine.Message{Body: "now"})
	s.receiveNone(q)
	s.clk.Advance(11 * time.Second)
	s.settleOnly(q, "early")
	s.settleOnly(q, "B")
	s.settleOnly(q, "late", "now")
}

// testBarrierBrowse: what waits behind a barrier (the barrier itself while older messages
// remain, and everything accepted after it) is browsed as delayed, as it is counted; it is
// never browsed as visible.
func testBarrierBrowse(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "a")
	s.sendMsgs(q, barrier("B"))
	s.sendMsgs(q, engine.Message{Body: "c"}, pmsg("p", 5))
	want := func(st engine.State, bodies ...string) {
		t.Helper()
		for _, limit := range []int{1, 2, 100} {
			got := s.browseAll(q, st, limit, "")
			slices.Sort(got)
			if w := slices.Sorted(slices.Values(bodies)); !slices.Equal(got, w) {
				t.Fatalf("browse %s (pages of %d) = %q, want %q", st, limit, got, w)
			}
		}
	}
	want(engine.StateVisible, "a")
	want(engine.StateDelayed, "B", "c", "p")
	page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: engine.StateDelayed, Limit: 10})
	wantNil(t, "browse", err)
	for _, m := range page.Messages {
		if m.State != engine.StateDelayed || m.ReceiveCount != 0 || m.SentAt.IsZero() || (m.Body == "p") != (m.Priority == 5) {
			t.Fatalf("held message browsed as %+v", m)
		}
	}
	got := s.wantOnly(q, time.Minute, "a")
	want(engine.StateInFlight, "a")
	wantNil(t, "ack a", s.ack(q, got[0].Delivery)[0])
	b := s.wantOnly(q, time.Minute, "B")
	want(engine.StateInFlight, "B")
	want(engine.StateDelayed, "c", "p")
	want(engine.StateVisible)
	wantNil(t, "ack B", s.ack(q, b[0].Delivery)[0])
	want(engine.StateVisible, "c", "p") // B has left: browse shows them released
	want(engine.StateDelayed)
	s.settleOnly(q, "c", "p")
}
