package enginetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// At-most-once queues (docs/delivery-options.md#at-most-once-queues): a receive removes every
// message it returns, in the same step as the hand-out: nothing is in flight, nothing comes back,
// nothing is redriven, and the delivery it returns settles nothing.

func atMostOnceTests(h Harness) []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"AtMostOnceReceiveRemoves", testAtMostOnceRemoves},
		{"AtMostOnceNoRedrive", testAtMostOnceNoRedrive},
		{"AtMostOnceKeyedAndBarrier", testAtMostOnceKeyedBarrier},
		{"AtMostOnceStoredBytes", func(t *testing.T, s *suite) { testAtMostOnceBytes(t, s, h) }},
		{"AtMostOnceConcurrent", testAtMostOnceConcurrent},
		{"AtMostOncePartitions", func(t *testing.T, s *suite) { testAtMostOncePartitions(t, h) }},
	}
}

func atMostOnce(q *engine.Queue) { q.AtMostOnce = true }

// wantGone checks that a delivery of an at-most-once receive settles nothing: every
// settlement answers stale.
func (s *suite) wantGone(q engine.Queue, m engine.Received) {
	s.t.Helper()
	wantStale(s.t, "ack of an at-most-once delivery", s.ack(q, m.Delivery)[0])
	wantStale(s.t, "release of an at-most-once delivery", s.changeVis(q, m.Delivery, 0))
	wantStale(s.t, "dead-letter of an at-most-once delivery", s.deadLetter(q, m.Delivery, ""))
}

func testAtMostOnceRemoves(t *testing.T, s *suite) {
	q := s.queue(atMostOnce)
	long := time.Minute
	s.sendMsgs(q, engine.Message{Body: "a", Attributes: map[string]string{"k": "v"}}, engine.Message{Body: "b"},
		engine.Message{Body: "late", Delay: &long})
	s.wantCounts(q, 2, 0, 1)
	got := s.wantOnly(q, 30*time.Second, "a", "b")
	for _, m := range got {
		if m.ReceiveCount != 1 || !m.VisibilityDeadline.IsZero() {
			t.Fatalf("received %+v: want receiveCount 1 and no visibility deadline", m)
		}
	}
	if a := byBody(got, "a"); a.Attributes["k"] != "v" {
		t.Fatalf("attributes %v, want k=v", a.Attributes)
	}
	s.wantCounts(q, 0, 0, 1) // nothing in flight, ever
	if page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: engine.StateInFlight, Limit: 10}); err != nil || len(page.Messages) != 0 {
		t.Fatalf("browse in flight = %+v, %v; want nothing", page.Messages, err)
	}
	for _, m := range got {
		s.wantGone(q, m)
	}
	s.clk.Advance(2 * time.Minute) // past every visibility deadline: nothing comes back
	late := s.wantOnly(q, 30*time.Second, "late")
	s.wantGone(q, late[0])
	s.receiveNone(q)
	s.wantCounts(q, 0, 0, 0)
}

// testAtMostOnceNoRedrive: a redrive policy never moves a message of an at-most-once queue
// (none is received twice), and one dead-lettered into it is received once and gone.
func testAtMostOnceNoRedrive(t *testing.T, s *suite) {
	dlq := s.queue(atMostOnce)
	q := s.queue(atMostOnce, withRedrive(dlq, 1))
	s.send(q, "x")
	m := s.receiveOne(q, time.Second)
	s.clk.Advance(2 * time.Second)
	s.receiveNone(q)
	s.receiveNone(dlq)
	s.wantGone(q, m)

	src := s.queue(withRedrive(dlq, 5))
	s.send(src, "y")
	wantNil(t, "dead-letter into the at-most-once queue", s.deadLetter(src, s.receiveOne(src, time.Minute).Delivery, ""))
	got := s.wantOnly(dlq, time.Minute, "y")
	if got[0].DeadLetter == nil || got[0].DeadLetter.SourceQueue != src.ID {
		t.Fatalf("dead-letter info %+v, want the source queue", got[0].DeadLetter)
	}
	s.receiveNone(dlq)
}

// testAtMostOnceKeyedAndBarrier: a keyed message taken by an at-most-once receive frees its
// key at once, and a barrier waits only until the messages before it were handed out.
func testAtMostOnceKeyedBarrier(t *testing.T, s *suite) {
	q := s.queue(atMostOnce)
	first := s.sendKeyed(q, []bool{false}, keyedMsg("K", "v1", engine.MergeReplace, nil))
	s.wantOnly(q, time.Minute, "v1")
	again := s.sendKeyed(q, []bool{false}, keyedMsg("K", "v2", engine.MergeReplace, nil))
	if again[0] == first[0] {
		t.Fatal("a keyed send after the at-most-once receive merged into the message handed out")
	}
	s.wantOnly(q, time.Minute, "v2")

	s.send(q, "a")
	s.sendMsgs(q, barrier("B"))
	s.send(q, "c")
	var order []string
	for range 5 {
		for _, m := range s.receive(q, engine.MaxBatch, time.Minute) {
			order = append(order, m.Body)
		}
	}
	if fmt.Sprint(order) != "[a B c]" {
		t.Fatalf("handed out %q, want a, then the barrier B, then c, each once", order)
	}
	s.wantCounts(q, 0, 0, 0)
}

func testAtMostOnceBytes(t *testing.T, s *suite, h Harness) {
	b := &bytesSuite{suite: s, h: h, project: ids.New()}
	q := b.queue(atMostOnce)
	long := time.Minute
	b.sendMsgs(q, engine.Message{Body: "aaa"}, engine.Message{Body: "b", Attributes: map[string]string{"k": "vv"}},
		engine.Message{Body: "cccc", Delay: &long})
	b.want("send", 11)
	if got := b.receive(q, 1, time.Minute); len(got) != 1 || got[0].Body != "aaa" {
		t.Fatalf("received %+v, want aaa", got)
	}
	b.want("at-most-once receive of aaa", 8)
	b.wantOnly(q, time.Minute, "b")
	b.want("at-most-once receive of b", 4)
	b.clk.Advance(2 * time.Minute)
	b.wantOnly(q, time.Minute, "cccc") // a delayed message, stored apart from the undelayed
	b.want("at-most-once receive of the delayed cccc", 0)
}

// testAtMostOnceConcurrent: consumers racing over one backlog are handed every message exactly
// once between them, and the queue ends empty with nothing in flight.
func testAtMostOnceConcurrent(t *testing.T, s *suite) {
	q := s.queue(atMostOnce)
	const n = 300
	for i := 0; i < n; i += engine.MaxBatch {
		msgs := make([]engine.Message, engine.MaxBatch)
		for j := range msgs {
			msgs[j] = engine.Message{Body: fmt.Sprint(i + j)}
		}
		s.sendMsgs(q, msgs...)
	}
	seen := concurrentDrain(t, s, q, 6)
	if len(seen) != n {
		t.Fatalf("handed out %d distinct messages, want %d", len(seen), n)
	}
	s.wantCounts(q, 0, 0, 0)
}

// concurrentDrain receives from q with k consumers until the queue answers empty, failing on
// any message handed out twice; it returns the ids seen.
func concurrentDrain(t *testing.T, s *suite, q engine.Queue, k int) map[ids.ID]bool {
	t.Helper()
	var mu sync.Mutex
	seen := map[ids.ID]bool{}
	var dup []string
	var wg sync.WaitGroup
	errs := make(chan error, k)
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: engine.MaxBatch, Visibility: time.Second})
				if err != nil {
					errs <- err
					return
				}
				if len(res.Messages) == 0 {
					return
				}
				mu.Lock()
				for _, m := range res.Messages {
					if seen[m.MessageID] {
						dup = append(dup, m.Body)
					}
					seen[m.MessageID] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Receive: %v", err)
	}
	if len(dup) > 0 {
		t.Fatalf("handed out more than once: %q", dup)
	}
	return seen
}

// testAtMostOncePartitions: with several partitions, every message is still handed out once.
func testAtMostOncePartitions(t *testing.T, h Harness) {
	if h.NewWithPartitionRate == nil {
		t.Skip("the engine has no partitions")
	}
	e, clk := h.NewWithPartitionRate(t, 5)
	s := &suite{t: t, e: e, clk: clk, ctx: t.Context()}
	q := s.queue(atMostOnce)
	const n = 600
	for range n / 30 { // 30 messages a second against a rate of 5: the queue grows
		for range 3 {
			s.send(q, "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
		}
		clk.Advance(1100 * time.Millisecond)
	}
	if st := s.stats(q); st.Partitions < 2 {
		t.Fatalf("partitions = %d, want the queue grown past 1", st.Partitions)
	}
	if seen := concurrentDrain(t, s, q, 4); len(seen) != n {
		t.Fatalf("handed out %d distinct messages, want %d", len(seen), n)
	}
	s.wantCounts(q, 0, 0, 0)
}
