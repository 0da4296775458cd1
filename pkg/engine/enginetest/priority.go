package enginetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// priorityTests are the conformance cases of message priority
// (docs/delivery-options.md#priority).
func priorityTests(h Harness) []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"PriorityOrder", testPriorityOrder},
		{"PriorityRedelivery", testPriorityRedelivery},
		{"PriorityDelayed", testPriorityDelayed},
		{"PriorityCountsAndBrowse", testPriorityCountsBrowse},
		{"PriorityLeavesQueue", testPriorityLeaves},
		{"PriorityKeyed", testPriorityKeyed},
		{"PriorityMove", testPriorityMove},
		{"PriorityPartitions", func(t *testing.T, s *suite) { testPriorityPartitions(t, h) }},
	}
}

func pmsg(body string, prio int) engine.Message { return engine.Message{Body: body, Priority: prio} }

// bodiesOf is the bodies of ms, each with its priority ("body/p").
func bodiesOf(ms []engine.Received) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Body + "/" + string(rune('0'+m.Priority))
	}
	return strings.Join(out, " ")
}

// testPriorityOrder: the highest priority first, the oldest first within one, whether one
// receive takes the lot or one message at a time, behind a backlog of priority 0.
func testPriorityOrder(t *testing.T, s *suite) {
	q := s.queue()
	for i := range 30 {
		s.sendMsgs(q, pmsg("low"+string(rune('a'+i%26)), 0))
	}
	s.sendMsgs(q, pmsg("p5a", 5), pmsg("p9a", 9), pmsg("p1a", 1))
	s.clk.Advance(time.Millisecond)
	s.sendMsgs(q, pmsg("p5b", 5))
	s.clk.Advance(time.Millisecond)
	s.sendMsgs(q, pmsg("p9b", 9), pmsg("p5c", 5))
	got := bodiesOf(s.receive(q, 7, time.Minute))
	if want := "p9a/9 p9b/9 p5a/5 p5b/5 p5c/5 p1a/1 lowa/0"; got != want {
		t.Fatalf("one receive took %q, want %q", got, want)
	}
	q2 := s.queue()
	s.sendMsgs(q2, pmsg("a", 0), pmsg("b", 3))
	s.clk.Advance(time.Millisecond)
	s.sendMsgs(q2, pmsg("c", 3), pmsg("d", 8), pmsg("e", 0))
	var one []string
	for range 5 {
		m := s.receiveOne(q2, time.Minute)
		one = append(one, bodiesOf([]engine.Received{m}))
	}
	if got, want := strings.Join(one, " "), "d/8 b/3 c/3 a/0 e/0"; got != want {
		t.Fatalf("receives one at a time took %q, want %q", got, want)
	}
	s.receiveNone(q2)
}

// testPriorityRedelivery: a message back from flight (released, or its deadline passed)
// keeps its priority and goes before lower ones that waited longer.
func testPriorityRedelivery(t *testing.T, s *suite) {
	q := s.queue()
	s.sendMsgs(q, pmsg("hi", 7))
	hi := s.receiveOne(q, 10*time.Second)
	s.clk.Advance(time.Millisecond)
	s.sendMsgs(q, pmsg("mid", 4), pmsg("low", 0))
	wantNil(t, "release", s.changeVis(q, hi.Delivery, 0))
	m := s.receiveOne(q, 10*time.Second)
	if m.Body != "hi" || m.Priority != 7 || m.ReceiveCount != 2 {
		t.Fatalf("after the release received %s/%d (receiveCount %d), want hi/7 (2)", m.Body, m.Priority, m.ReceiveCount)
	}
	wantTime(t, "VisibilityDeadline", m.VisibilityDeadline, s.clk.Now().Add(10*time.Second))
	// Extended, it stays in flight until the new deadline.
	wantNil(t, "extend", s.changeVis(q, m.Delivery, 20*time.Second))
	s.clk.Advance(15 * time.Second)
	if got := s.receiveOne(q, time.Minute); got.Body != "mid" {
		t.Fatalf("with hi extended received %s, want mid", got.Body)
	}
	s.clk.Advance(5 * time.Second)
	got := bodiesOf(s.receive(q, 10, time.Minute))
	if got != "hi/7 low/0" {
		t.Fatalf("after hi's deadline received %q, want %q", got, "hi/7 low/0")
	}
}

// testPriorityDelayed: a delayed message of high priority waits its delay, then goes first;
// an empty receive meanwhile names when it becomes visible.
func testPriorityDelayed(t *testing.T, s *suite) {
	q := s.queue()
	d := 30 * time.Second
	s.sendMsgs(q, engine.Message{Body: "later", Priority: 9, Delay: &d})
	res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	wantNil(t, "receive", err)
	if len(res.Messages) != 0 {
		t.Fatalf("received %q before its delay ended", bodiesOf(res.Messages))
	}
	wantTime(t, "NextVisibleAt", res.NextVisibleAt, s.clk.Now().Add(d))
	s.sendMsgs(q, pmsg("now", 2))
	if m := s.receiveOne(q, 5*time.Second); m.Body != "now" {
		t.Fatalf("received %s, want now", m.Body)
	}
	res, err = s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	wantNil(t, "receive", err)
	wantTime(t, "NextVisibleAt with one in flight", res.NextVisibleAt, s.clk.Now().Add(5*time.Second))
	s.clk.Advance(d)
	if got := bodiesOf(s.receive(q, 10, time.Minute)); got != "later/9 now/2" {
		t.Fatalf("after the delay received %q, want %q", got, "later/9 now/2")
	}
}

// testPriorityCountsBrowse: counts and browse see messages of every priority in every state,
// with their priority and times; pages of one message cross priorities without a gap.
func testPriorityCountsBrowse(t *testing.T, s *suite) {
	q := s.queue()
	d := time.Minute
	s.sendMsgs(q, pmsg("v0", 0), pmsg("v3", 3), pmsg("v9", 9), pmsg("f6", 6))
	s.sendMsgs(q, engine.Message{Body: "d4", Priority: 4, Delay: &d}, engine.Message{Body: "d0", Delay: &d})
	sentAt := s.clk.Now()
	s.clk.Advance(time.Millisecond)
	fl := s.receiveOne(q, 0) // v9, immediately visible again
	if fl.Body != "v9" {
		t.Fatalf("received %s, want v9", fl.Body)
	}
	s.wantCounts(q, 4, 0, 2)
	_ = s.receive(q, 2, 30*time.Second) // v9 again and f6 in flight
	s.wantCounts(q, 2, 2, 2)
	for _, limit := range []int{1, 2, 100} {
		for state, want := range map[engine.State][]string{
			engine.StateVisible:  {"v0", "v3"},
			engine.StateInFlight: {"f6", "v9"},
			engine.StateDelayed:  {"d0", "d4"},
		} {
			got := s.browseAll(q, state, limit, "")
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("browse %s (limit %d) = %v, want %v", state, limit, got, want)
			}
		}
	}
	prios := map[string]int{"v0": 0, "v3": 3, "v9": 9, "f6": 6, "d4": 4, "d0": 0}
	for _, state := range []engine.State{engine.StateVisible, engine.StateInFlight, engine.StateDelayed} {
		page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: state, Limit: 10})
		wantNil(t, "browse", err)
		for _, m := range page.Messages {
			if m.Priority != prios[m.Body] {
				t.Fatalf("browse %s: %s has priority %d, want %d", state, m.Body, m.Priority, prios[m.Body])
			}
			wantTime(t, m.Body+" SentAt", m.SentAt, sentAt)
			switch state {
			case engine.StateInFlight:
				wantTime(t, m.Body+" VisibleAt", m.VisibleAt, s.clk.Now().Add(30*time.Second))
			case engine.StateDelayed:
				wantTime(t, m.Body+" VisibleAt", m.VisibleAt, sentAt.Add(d))
			default:
				if m.VisibleAt.After(s.clk.Now()) {
					t.Fatalf("visible %s has VisibleAt %v after now", m.Body, m.VisibleAt)
				}
			}
		}
	}
}

// testPriorityLeaves: messages of any priority leave the queue as others do: acknowledged,
// deleted by id, expired, purged, and moved to the dead-letter queue (where they arrive at
// priority 0).
func testPriorityLeaves(t *testing.T, s *suite) {
	dlq := s.queue()
	q := s.queue(withRedrive(dlq, 1), withRetention(time.Hour))
	hour := time.Hour / 2
	ids4 := s.sendMsgs(q, pmsg("ack", 8), pmsg("del", 5), pmsg("dead", 9), engine.Message{Body: "deld", Priority: 2, Delay: &hour})
	wantNil(t, "delete visible", s.e.DeleteMessage(s.ctx, q, ids4[1]))
	wantNil(t, "delete delayed", s.e.DeleteMessage(s.ctx, q, ids4[3]))
	ms := s.receive(q, 10, 10*time.Second)
	if bodiesOf(ms) != "dead/9 ack/8" {
		t.Fatalf("received %q, want %q", bodiesOf(ms), "dead/9 ack/8")
	}
	wantNil(t, "ack", s.ack(q, ms[1].Delivery)[0])
	s.clk.Advance(10 * time.Second)
	s.receiveNone(q) // "dead" was received once: it moves to the dead-letter queue
	s.wantCounts(q, 0, 0, 0)
	m := s.receiveOne(dlq, time.Minute)
	if m.Body != "dead" || m.Priority != 0 {
		t.Fatalf("dead-letter queue received %s/%d, want dead/0", m.Body, m.Priority)
	}
	s.sendMsgs(q, pmsg("old", 6))
	s.clk.Advance(time.Hour)
	s.wantCounts(q, 0, 0, 0)
	s.receiveNone(q)
	s.sendMsgs(q, pmsg("purged", 3), pmsg("purged0", 0))
	s.clk.Advance(time.Millisecond)
	wantNil(t, "purge", s.e.Purge(s.ctx, q))
	s.clk.Advance(time.Millisecond)
	s.wantCounts(q, 0, 0, 0)
	s.receiveNone(q)
}

// testPriorityKeyed: a keyed message takes its priority; a merge into it keeps its place.
func testPriorityKeyed(t *testing.T, s *suite) {
	q := s.queue()
	s.sendMsgs(q, pmsg("plain", 0))
	s.clk.Advance(time.Millisecond)
	s.sendMsgs(q, engine.Message{Body: "k1", Key: "K", Priority: 6})
	s.sendMsgs(q, engine.Message{Body: "k2", Key: "K", Priority: 6})
	got := bodiesOf(s.receive(q, 10, time.Minute))
	if got != "k2/6 plain/0" {
		t.Fatalf("received %q, want %q", got, "k2/6 plain/0")
	}
}

// testPriorityMove: a move task finds visible messages of every priority (and none in flight)
// and they arrive at priority 0.
func testPriorityMove(t *testing.T, s *suite) {
	src, dst := s.queue(), s.queue()
	s.sendMsgs(src, pmsg("a", 0), pmsg("b", 7), pmsg("c", 9))
	held := s.receiveOne(src, time.Minute) // c, in flight: not moved
	if moved, failed := s.moveAll(src, "t", 1, to(dst)); moved != 2 || failed != 0 {
		t.Fatalf("moved %d, failed %d; want 2, 0", moved, failed)
	}
	got := s.drain(dst)
	if len(got) != 2 {
		t.Fatalf("destination holds %d messages, want 2", len(got))
	}
	for _, m := range got {
		if m.Priority != 0 || m.Body == held.Body {
			t.Fatalf("moved %s/%d, want a and b at priority 0", m.Body, m.Priority)
		}
	}
	s.wantCounts(src, 0, 1, 0)
}
