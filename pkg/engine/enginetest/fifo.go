package enginetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// fifoTests are the conformance cases of fifo queues (docs/fifo.md: message groups, strict
// per-group order, deduplication, group management).
func fifoTests(h Harness) []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"FIFOOrder", testFIFOOrder},
		{"FIFOBatchOfOneGroup", testFIFOBatch},
		{"FIFOBlocksWhileInFlight", testFIFOBlocks},
		{"FIFOOldestHeadsFirst", testFIFOOldestFirst},
		{"FIFORedeliveryAfterDeadline", testFIFODeadline},
		{"FIFORedeliveryAfterRelease", testFIFORelease},
		{"FIFOAckOutOfOrder", testFIFOAckOutOfOrder},
		{"FIFORetryAfterKeepsGroupBlocked", testFIFORetryAfter},
		{"FIFORedrive", testFIFORedrive},
		{"FIFOConsumerDeadLetter", testFIFOConsumerDeadLetter},
		{"FIFODedup", testFIFODedup},
		{"FIFOContentBasedDedup", testFIFOContentDedup},
		{"FIFOSequenceNumbers", testFIFOSequence},
		{"FIFOSendSequenceNumbers", testFIFOSendSequence},
		{"FIFOHashDedupID", testFIFOHashDedupID},
		{"FIFODelay", testFIFODelay},
		{"FIFOGroups", testFIFOGroups},
		{"FIFOPurgeGroup", testFIFOPurgeGroup},
		{"FIFORetention", testFIFORetention},
		{"FIFOPurgeAndDelete", testFIFOPurgeDelete},
		{"FIFOPartitionGrowth", func(t *testing.T, s *suite) { testFIFOPartitionGrowth(t, h) }},
		{"FIFOHistory", func(t *testing.T, s *suite) { testFIFOHistory(t, h) }},
	}
}

func fifo(q *engine.Queue)             { q.Type = engine.FIFO }
func withContentDedup(q *engine.Queue) { q.ContentBasedDedup = true }

// sendG sends bodies to one group of a fifo queue, one message each, in one call.
func (s *suite) sendG(q engine.Queue, group string, bodies ...string) []ids.ID {
	s.t.Helper()
	msgs := make([]engine.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = engine.Message{Body: b, GroupID: group}
	}
	return s.sendMsgs(q, msgs...)
}

// sendResults sends and returns the raw results (duplicates allowed).
func (s *suite) sendResults(q engine.Queue, msgs ...engine.Message) []engine.SendResult {
	s.t.Helper()
	res, err := s.e.Send(s.ctx, q, msgs)
	if err != nil {
		s.t.Fatalf("Send: %v", err)
	}
	if len(res) != len(msgs) {
		s.t.Fatalf("Send answered %d results for %d messages", len(res), len(msgs))
	}
	return res
}

func bodies(ms []engine.Received) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Body
	}
	return out
}

func deliveries(ms []engine.Received) []engine.Delivery {
	out := make([]engine.Delivery, len(ms))
	for i, m := range ms {
		out[i] = m.Delivery
	}
	return out
}

// wantBodies receives up to max and checks the bodies, in order.
func (s *suite) wantBodies(q engine.Queue, max int, vis time.Duration, want ...string) []engine.Received {
	s.t.Helper()
	ms := s.receive(q, max, vis)
	if got := bodies(ms); !slices.Equal(got, want) {
		s.t.Fatalf("received %q, want %q", got, want)
	}
	return ms
}

func (s *suite) ackAll(q engine.Queue, ms []engine.Received) {
	s.t.Helper()
	for i, err := range s.ack(q, deliveries(ms)...) {
		wantNil(s.t, fmt.Sprintf("ack %d (%s)", i, ms[i].Body), err)
	}
}

func testFIFOOrder(t *testing.T, s *suite) {
	q := s.queue(fifo)
	var sent []ids.ID
	for i := range 5 {
		sent = append(sent, s.sendG(q, "g", fmt.Sprintf("m%d", i))...)
		s.clk.Advance(time.Millisecond)
	}
	sent = append(sent, s.sendG(q, "g", "m5", "m6", "m7")...)
	s.wantCounts(q, 8, 0, 0)
	ms := s.wantBodies(q, 10, time.Minute, "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7")
	for i, m := range ms {
		if m.MessageID != sent[i] || m.GroupID != "g" || m.ReceiveCount != 1 {
			t.Fatalf("message %d: %+v, want id %s group g", i, m, sent[i])
		}
		if i > 0 && m.SequenceNumber <= ms[i-1].SequenceNumber {
			t.Fatalf("sequence numbers %d then %d", ms[i-1].SequenceNumber, m.SequenceNumber)
		}
	}
	s.wantCounts(q, 0, 8, 0)
	s.ackAll(q, ms)
	s.wantCounts(q, 0, 0, 0)
	s.receiveNone(q)
}

func testFIFOBatch(t *testing.T, s *suite) {
	q := s.queue(fifo)
	s.sendG(q, "a", "a1", "a2", "a3", "a4", "a5")
	first := s.wantBodies(q, 3, time.Minute, "a1", "a2", "a3")
	s.receiveNone(q) // a4 and a5 wait for the batch
	s.wantCounts(q, 2, 3, 0)
	s.ackAll(q, first)
	rest := s.wantBodies(q, 10, time.Minute, "a4", "a5")
	s.ackAll(q, rest)
	s.receiveNone(q)
}

func testFIFOBlocks(t *testing.T, s *suite) {
	q := s.queue(fifo)
	s.sendG(q, "a", "a1", "a2")
	s.clk.Advance(time.Millisecond)
	s.sendG(q, "b", "b1")
	a1 := s.wantBodies(q, 1, time.Minute, "a1")
	b1 := s.wantBodies(q, 10, time.Minute, "b1") // a is locked; b is not blocked by it
	s.receiveNone(q)
	w, cancel := s.e.Watch(q.ID)
	defer cancel()
	s.ackAll(q, a1) // unlocks a: a waiting receive must learn of it
	waitSignal(t, w, "the ack that unlocked a group")
	s.wantBodies(q, 10, time.Minute, "a2")
	s.receiveNone(q)
	s.ackAll(q, b1)
	s.receiveNone(q) // a2 is still in flight
}

func testFIFOOldestFirst(t *testing.T, s *suite) {
	q := s.queue(fifo)
	for _, g := range []string{"c", "a", "b"} {
		s.sendG(q, g, g+"1")
		s.clk.Advance(time.Second)
	}
	s.wantBodies(q, 1, time.Minute, "c1")
	s.wantBodies(q, 1, time.Minute, "a1")
	s.wantBodies(q, 1, time.Minute, "b1")

	// A hot group does not starve the others: its batch locks it, and the next receive serves
	// the next oldest group.
	hot := s.queue(fifo)
	var hb []string
	for i := range 20 {
		hb = append(hb, fmt.Sprintf("h%02d", i))
	}
	for i := 0; i < 20; i += 10 {
		s.sendG(hot, "hot", hb[i:i+10]...)
	}
	s.clk.Advance(time.Second)
	s.sendG(hot, "cold", "c1")
	b1 := s.wantBodies(hot, 10, time.Minute, hb[:10]...)
	s.wantBodies(hot, 10, time.Minute, "c1")
	s.receiveNone(hot)
	s.ackAll(hot, b1)
	s.wantBodies(hot, 10, time.Minute, hb[10:]...)

	// One receive serves several groups, oldest head first, each group's run in order.
	mix := s.queue(fifo)
	s.sendG(mix, "x", "x1", "x2")
	s.clk.Advance(time.Millisecond)
	s.sendG(mix, "y", "y1")
	s.clk.Advance(time.Millisecond)
	s.sendG(mix, "x", "x3")
	s.wantBodies(mix, 10, time.Minute, "x1", "x2", "x3", "y1")
}

func testFIFODeadline(t *testing.T, s *suite) {
	q := s.queue(fifo)
	s.sendG(q, "a", "a1", "a2", "a3")
	first := s.wantBodies(q, 10, 10*time.Second, "a1", "a2", "a3")
	res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	wantNil(t, "receive", err)
	if len(res.Messages) != 0 {
		t.Fatalf("received %q from a locked group", bodies(res.Messages))
	}
	wantTime(t, "NextVisibleAt", res.NextVisibleAt, s.clk.Now().Add(10*time.Second))
	s.clk.Advance(10*time.Second - time.Millisecond)
	s.receiveNone(q)
	s.clk.Advance(time.Millisecond)
	again := s.wantBodies(q, 2, time.Minute, "a1", "a2")
	for i, m := range again {
		if m.MessageID != first[i].MessageID || m.ReceiveCount != 2 {
			t.Fatalf("redelivery %d: %+v", i, m)
		}
	}
	wantStale(t, "the first delivery's handle", s.ack(q, first[0].Delivery)[0])
	// The first batch's third message (not received again) still acks with its handle: its
	// deadline passed, but no receive took it since.
	wantNil(t, "ack a3 after its deadline", s.ack(q, first[2].Delivery)[0])
	s.ackAll(q, again)
	s.wantCounts(q, 0, 0, 0)
}

func testFIFORelease(t *testing.T, s *suite) {
	q := s.queue(fifo)
	s.sendG(q, "a", "a1", "a2", "a3", "a4")
	ms := s.wantBodies(q, 3, time.Hour, "a1", "a2", "a3")
	wantNil(t, "ack a1", s.ack(q, ms[0].Delivery)[0])
	wantNil(t, "release a2", s.changeVis(q, ms[1].Delivery, 0))
	s.receiveNone(q) // a3 is still in flight: the group stays locked
	w, cancel := s.e.Watch(q.ID)
	defer cancel()
	wantNil(t, "release a3", s.changeVis(q, ms[2].Delivery, 0))
	waitSignal(t, w, "the release that unlocked the group")
	again := s.wantBodies(q, 10, time.Hour, "a2", "a3", "a4")
	if again[0].ReceiveCount != 2 || again[1].ReceiveCount != 2 || again[2].ReceiveCount != 1 {
		t.Fatalf("receive counts %d %d %d", again[0].ReceiveCount, again[1].ReceiveCount, again[2].ReceiveCount)
	}
}

func testFIFOAckOutOfOrder(t *testing.T, s *suite) {
	q := s.queue(fifo)
	s.sendG(q, "a", "a1", "a2", "a3", "a4")
	ms := s.wantBodies(q, 3, 10*time.Second, "a1", "a2", "a3")
	wantNil(t, "ack a2", s.ack(q, ms[1].Delivery)[0])
	s.receiveNone(q)
	wantNil(t, "ack a1", s.ack(q, ms[0].Delivery)[0])
	s.receiveNone(q) // a3 in flight
	s.clk.Advance(10 * time.Second)
	// a3's deadline passed: it comes back at the head, before a4; a2 stays gone.
	s.wantBodies(q, 10, time.Minute, "a3", "a4")

	// Acking the later message of an expired batch leaves the earlier one at the head.
	q2 := s.queue(fifo)
	s.sendG(q2, "b", "b1", "b2", "b3")
	b := s.wantBodies(q2, 2, 10*time.Second, "b1", "b2")
	wantNil(t, "ack b2", s.ack(q2, b[1].Delivery)[0])
	s.clk.Advance(10 * time.Second)
	s.wantBodies(q2, 10, time.Minute, "b1", "b3")
}

func testFIFORetryAfter(t *testing.T, s *suite) {
	q := s.queue(fifo)
	s.sendG(q, "a", "a1", "a2")
	s.clk.Advance(time.Millisecond)
	s.sendG(q, "b", "b1")
	a1 := s.wantBodies(q, 1, 10*time.Second, "a1")
	wantNil(t, "retry a1 after 60 s", s.changeVis(q, a1[0].Delivery, time.Minute))
	s.clk.Advance(30 * time.Second) // past the receive's deadline: a stays blocked
	s.wantCounts(q, 2, 1, 0)
	s.wantBodies(q, 10, time.Minute, "b1")
	res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	wantNil(t, "receive", err)
	if len(res.Messages) != 0 {
		t.Fatalf("received %q while a1 waits to be retried", bodies(res.Messages))
	}
	wantTime(t, "NextVisibleAt", res.NextVisibleAt, s.clk.Now().Add(30*time.Second))
	s.clk.Advance(30 * time.Second)
	again := s.wantBodies(q, 10, time.Minute, "a1", "a2")
	if again[0].ReceiveCount != 2 {
		t.Fatalf("receiveCount %d after the retry, want 2", again[0].ReceiveCount)
	}

	// Extending one message of a batch keeps the whole group locked until that deadline.
	q2 := s.queue(fifo)
	s.sendG(q2, "c", "c1", "c2", "c3")
	c := s.wantBodies(q2, 2, 10*time.Second, "c1", "c2")
	wantNil(t, "extend c2", s.changeVis(q2, c[1].Delivery, time.Minute))
	s.clk.Advance(10 * time.Second)
	s.receiveNone(q2)
	s.clk.Advance(50 * time.Second)
	s.wantBodies(q2, 10, time.Minute, "c1", "c2", "c3")
}

func testFIFORedrive(t *testing.T, s *suite) {
	dlq := s.queue(fifo)
	q := s.queue(fifo, withRedrive(dlq, 2))
	ids := s.sendG(q, "a", "a1", "a2", "a3")
	s.clk.Advance(time.Millisecond)
	s.sendG(q, "b", "b1")
	for range 2 {
		s.wantBodies(q, 2, 10*time.Second, "a1", "a2")
		s.clk.Advance(10 * time.Second)
	}
	// a1 and a2 were received twice: the next receive moves both, in order, and the group
	// goes on with a3.
	s.wantBodies(q, 10, time.Minute, "a3", "b1")
	s.wantCounts(q, 0, 2, 0)
	s.wantCounts(dlq, 2, 0, 0)
	moved := s.wantBodies(dlq, 10, time.Minute, "a1", "a2")
	for i, m := range moved {
		if m.MessageID != ids[i] || m.GroupID != "a" || m.ReceiveCount != 1 || m.SequenceNumber == 0 {
			t.Fatalf("dead-lettered %+v: want id %s, group a, receiveCount 1, a sequence number", m, ids[i])
		}
		if m.DeadLetter == nil || m.DeadLetter.SourceQueue != q.ID || m.DeadLetter.Reason != engine.RedriveReason {
			t.Fatalf("dead-letter info %+v", m.DeadLetter)
		}
	}
	if moved[1].SequenceNumber <= moved[0].SequenceNumber {
		t.Fatalf("dead-letter queue sequence numbers %d, %d", moved[0].SequenceNumber, moved[1].SequenceNumber)
	}
}

func testFIFOConsumerDeadLetter(t *testing.T, s *suite) {
	dlq := s.queue(fifo)
	q := s.queue(fifo, withRedrive(dlq, 10))
	s.sendG(q, "a", "a1", "a2", "a3")
	ms := s.wantBodies(q, 2, time.Minute, "a1", "a2")
	wantNil(t, "dead-letter a1", s.deadLetter(q, ms[0].Delivery, "bad"))
	s.receiveNone(q) // a2 is in flight
	wantNil(t, "ack a2", s.ack(q, ms[1].Delivery)[0])
	s.wantBodies(q, 10, time.Minute, "a3")
	m := s.wantBodies(dlq, 10, time.Minute, "a1")[0]
	if m.GroupID != "a" || m.DeadLetter == nil || m.DeadLetter.Reason != "bad" {
		t.Fatalf("dead-lettered %+v", m)
	}

	// Without a redrive policy the message is dropped and the group goes on.
	q2 := s.queue(fifo)
	s.sendG(q2, "b", "b1", "b2")
	b := s.wantBodies(q2, 1, time.Minute, "b1")
	wantNil(t, "dead-letter b1", s.deadLetter(q2, b[0].Delivery, ""))
	s.wantBodies(q2, 10, time.Minute, "b2")
}

func testFIFODedup(t *testing.T, s *suite) {
	q := s.queue(fifo)
	first := s.sendResults(q, engine.Message{Body: "one", GroupID: "a", DedupID: "d1"})[0]
	if first.Duplicate || first.MessageID.IsZero() {
		t.Fatalf("first send %+v", first)
	}
	s.clk.Advance(4 * time.Minute)
	// Another body, another group: still a duplicate of the first within the window.
	dup := s.sendResults(q, engine.Message{Body: "two", GroupID: "b", DedupID: "d1"})[0]
	if !dup.Duplicate || dup.MessageID != first.MessageID {
		t.Fatalf("second send %+v, want a duplicate of %s", dup, first.MessageID)
	}
	s.wantCounts(q, 1, 0, 0)
	s.clk.Advance(time.Minute - time.Millisecond)
	if r := s.sendResults(q, engine.Message{Body: "three", GroupID: "a", DedupID: "d1"})[0]; !r.Duplicate || r.MessageID != first.MessageID {
		t.Fatalf("send 1 ms before the window ends: %+v", r)
	}
	// Duplicates did not extend the window: 5 minutes after the first accepted send it ends.
	s.clk.Advance(time.Millisecond)
	fresh := s.sendResults(q, engine.Message{Body: "four", GroupID: "a", DedupID: "d1"})[0]
	if fresh.Duplicate || fresh.MessageID == first.MessageID {
		t.Fatalf("send after the window: %+v", fresh)
	}
	// The new message opened a new window.
	if r := s.sendResults(q, engine.Message{Body: "five", GroupID: "c", DedupID: "d1"})[0]; !r.Duplicate || r.MessageID != fresh.MessageID {
		t.Fatalf("send in the new window: %+v, want a duplicate of %s", r, fresh.MessageID)
	}
	s.wantCounts(q, 2, 0, 0)

	// Within one batch: the second of two messages with one dedup id is the first's duplicate;
	// other messages of the batch are stored in order.
	res := s.sendResults(q,
		engine.Message{Body: "x", GroupID: "g", DedupID: "d2"},
		engine.Message{Body: "y", GroupID: "g"},
		engine.Message{Body: "x again", GroupID: "g", DedupID: "d2"},
		engine.Message{Body: "z", GroupID: "g", DedupID: "d3"},
	)
	if res[0].Duplicate || res[1].Duplicate || !res[2].Duplicate || res[3].Duplicate || res[2].MessageID != res[0].MessageID {
		t.Fatalf("batch results %+v", res)
	}
	var got []string
	for _, m := range s.receive(q, 10, time.Minute) {
		if m.GroupID == "g" {
			got = append(got, m.Body)
		}
	}
	if !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Fatalf("group g holds %q", got)
	}
	// A duplicate of a message that was since received, acknowledged or purged is still a
	// duplicate: the window counts from the accepted send.
	ms := s.receive(q, 10, time.Minute)
	s.ackAll(q, ms)
	if r := s.sendResults(q, engine.Message{Body: "z", GroupID: "g", DedupID: "d3"})[0]; !r.Duplicate || r.MessageID != res[3].MessageID {
		t.Fatalf("duplicate after the original's ack: %+v", r)
	}

	// Dedup ids are per queue.
	other := s.queue(fifo)
	if r := s.sendResults(other, engine.Message{Body: "one", GroupID: "a", DedupID: "d1"})[0]; r.Duplicate {
		t.Fatalf("dedup id of another queue: %+v", r)
	}
}

func testFIFOContentDedup(t *testing.T, s *suite) {
	q := s.queue(fifo, withContentDedup)
	a := s.sendResults(q, engine.Message{Body: "same", GroupID: "g1"})[0]
	b := s.sendResults(q, engine.Message{Body: "same", GroupID: "g2", Attributes: map[string]string{"k": "v"}})[0]
	if a.Duplicate || !b.Duplicate || b.MessageID != a.MessageID {
		t.Fatalf("content-based dedup: %+v then %+v", a, b)
	}
	c := s.sendResults(q, engine.Message{Body: "other", GroupID: "g1"})[0]
	d := s.sendResults(q, engine.Message{Body: "same", GroupID: "g1", DedupID: "explicit"})[0]
	if c.Duplicate || d.Duplicate {
		t.Fatalf("different body %+v, explicit dedup id %+v: want both stored", c, d)
	}
	s.clk.Advance(engine.DedupWindow)
	if e := s.sendResults(q, engine.Message{Body: "same", GroupID: "g1"})[0]; e.Duplicate {
		t.Fatalf("content-based dedup after the window: %+v", e)
	}
	s.wantCounts(q, 4, 0, 0)

	// Without contentBasedDedup, equal bodies are distinct messages.
	plain := s.queue(fifo)
	s.sendG(plain, "g", "same", "same")
	s.wantCounts(plain, 2, 0, 0)
}

func testFIFOSequence(t *testing.T, s *suite) {
	q := s.queue(fifo)
	var order []string
	for i := range 12 {
		g := fmt.Sprintf("g%d", i%3)
		b := fmt.Sprintf("%s-%d", g, i)
		order = append(order, b)
		s.sendG(q, g, b)
	}
	seq := map[string]uint64{}
	var all []engine.Received
	for {
		ms := s.receive(q, 10, time.Minute)
		if len(ms) == 0 {
			break
		}
		all = append(all, ms...)
		s.ackAll(q, ms)
	}
	if len(all) != len(order) {
		t.Fatalf("received %d of %d", len(all), len(order))
	}
	for _, m := range all {
		seq[m.Body] = m.SequenceNumber
	}
	for i := 1; i < len(order); i++ {
		if seq[order[i]] <= seq[order[i-1]] {
			t.Fatalf("sequence numbers not increasing in send order: %s=%d, %s=%d",
				order[i-1], seq[order[i-1]], order[i], seq[order[i]])
		}
	}

	// Browse shows group ids and sequence numbers.
	s.sendG(q, "b", "browsed")
	page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: engine.StateVisible, Limit: 10})
	wantNil(t, "browse", err)
	if len(page.Messages) != 1 || page.Messages[0].GroupID != "b" || page.Messages[0].SequenceNumber <= seq[order[len(order)-1]] {
		t.Fatalf("browsed %+v", page.Messages)
	}
}

func testFIFODelay(t *testing.T, s *suite) {
	q := s.queue(fifo, withDelay(10*time.Second))
	s.sendG(q, "a", "a1")
	s.clk.Advance(5 * time.Second)
	s.sendG(q, "a", "a2")
	s.wantCounts(q, 0, 0, 2)
	res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	wantNil(t, "receive", err)
	if len(res.Messages) != 0 {
		t.Fatalf("received delayed messages %q", bodies(res.Messages))
	}
	wantTime(t, "NextVisibleAt", res.NextVisibleAt, s.clk.Now().Add(5*time.Second))
	s.clk.Advance(5 * time.Second)
	s.wantCounts(q, 1, 0, 1)
	a1 := s.wantBodies(q, 10, time.Minute, "a1") // a2's delay has not ended
	s.ackAll(q, a1)
	s.receiveNone(q)
	s.clk.Advance(5 * time.Second)
	s.wantBodies(q, 10, time.Minute, "a2")
}

func collectGroups(t *testing.T, s *suite, q engine.Queue, limit int) []engine.Group {
	t.Helper()
	var all []engine.Group
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatalf("groups with limit %d: no end after 50 pages", limit)
		}
		page, err := s.e.Groups(s.ctx, q, limit, cursor, "")
		wantNil(t, "groups", err)
		if len(page.Groups) > limit {
			t.Fatalf("page of %d groups, limit %d", len(page.Groups), limit)
		}
		all = append(all, page.Groups...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

func testFIFOGroups(t *testing.T, s *suite) {
	q := s.queue(fifo)
	page, err := s.e.Groups(s.ctx, q, 10, "", "")
	wantNil(t, "groups of an empty queue", err)
	if len(page.Groups) != 0 || page.NextCursor != "" {
		t.Fatalf("empty queue groups %+v", page)
	}
	want := map[string]engine.Group{}
	for i := range 7 {
		g := fmt.Sprintf("group-%d{x}", i) // braces and punctuation are group id characters
		n := i%3 + 1
		for j := range n {
			s.sendG(q, g, fmt.Sprintf("%s/%d", g, j))
		}
		want[g] = engine.Group{GroupID: g, Messages: int64(n), State: engine.GroupActive}
	}
	s.sendG(q, "~!", "punctuation")
	want["~!"] = engine.Group{GroupID: "~!", Messages: 1, State: engine.GroupActive}
	// Lock two groups with batches in flight.
	ms := s.receive(q, 3, time.Minute)
	for _, m := range ms {
		g := want[m.GroupID]
		g.InFlight = true
		g.HeadReceiveCount = 1 // its head was received: in flight now
		want[m.GroupID] = g
	}
	for _, limit := range []int{1, 2, 3, 100} {
		got := map[string]engine.Group{}
		for _, g := range collectGroups(t, s, q, limit) {
			if _, dup := got[g.GroupID]; dup {
				t.Fatalf("limit %d: group %s listed twice", limit, g.GroupID)
			}
			got[g.GroupID] = g
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: %d groups %v, want %d", limit, len(got), got, len(want))
		}
		for id, w := range want {
			if got[id] != w {
				t.Fatalf("limit %d: group %+v, want %+v", limit, got[id], w)
			}
		}
	}
	// Acknowledging a batch unlocks its group; emptied groups disappear.
	s.ackAll(q, ms)
	for _, g := range collectGroups(t, s, q, 100) {
		if g.InFlight {
			t.Fatalf("group %+v in flight after its batch was acknowledged", g)
		}
	}
	_, err = s.e.Groups(s.ctx, q, 10, "not a cursor", "")
	wantRefusal(t, "groups with a bad cursor", err, engine.ErrBadCursor)
	// A retried-after message keeps its group in flight; a delayed one is not in flight.
	dq := s.queue(fifo, withDelay(time.Minute))
	s.sendG(dq, "later", "l1")
	gs := collectGroups(t, s, dq, 10)
	if len(gs) != 1 || gs[0] != (engine.Group{GroupID: "later", Messages: 1, State: engine.GroupActive}) {
		t.Fatalf("delayed group %+v", gs)
	}
}

func testFIFOPurgeGroup(t *testing.T, s *suite) {
	q := s.queue(fifo)
	s.sendG(q, "a", "a1", "a2", "a3")
	s.clk.Advance(time.Millisecond)
	s.sendG(q, "b", "b1", "b2")
	a := s.wantBodies(q, 1, time.Minute, "a1")
	s.wantCounts(q, 4, 1, 0)
	wantNil(t, "purge group a", s.e.PurgeGroup(s.ctx, q, "a"))
	s.wantCounts(q, 2, 0, 0)
	wantStale(t, "ack of a purged message", s.ack(q, a[0].Delivery)[0])
	gs := collectGroups(t, s, q, 10)
	if len(gs) != 1 || gs[0].GroupID != "b" || gs[0].Messages != 2 {
		t.Fatalf("groups after purging a: %+v", gs)
	}
	wantNil(t, "purge of a group without messages", s.e.PurgeGroup(s.ctx, q, "nothing"))
	s.sendG(q, "a", "a4")
	s.wantBodies(q, 10, time.Minute, "b1", "b2", "a4")
	// No purge interval for groups.
	wantNil(t, "purge group a again", s.e.PurgeGroup(s.ctx, q, "a"))
	s.wantCounts(q, 0, 2, 0)
}

func testFIFORetention(t *testing.T, s *suite) {
	q := s.queue(fifo, withRetention(time.Minute))
	s.sendG(q, "a", "a1")
	s.clk.Advance(30 * time.Second)
	s.sendG(q, "a", "a2")
	a1 := s.wantBodies(q, 1, time.Hour, "a1")
	s.clk.Advance(30 * time.Second) // a1 expires while in flight, its group locked for an hour
	wantStale(t, "ack after expiry", s.ack(q, a1[0].Delivery)[0])
	wantNil(t, "sweep", s.e.Sweep(s.ctx, []engine.Queue{q}))
	s.wantCounts(q, 1, 0, 0)
	s.wantBodies(q, 10, time.Minute, "a2") // the expired head no longer blocks its group

	// An expired head that was never received is skipped by a receive.
	q2 := s.queue(fifo, withRetention(time.Minute))
	s.sendG(q2, "b", "b1")
	s.clk.Advance(30 * time.Second)
	s.sendG(q2, "b", "b2")
	s.clk.Advance(30 * time.Second)
	s.wantBodies(q2, 10, time.Minute, "b2")
	wantNil(t, "sweep", s.e.Sweep(s.ctx, []engine.Queue{q2}))
	s.wantCounts(q2, 0, 1, 0)
	s.clk.Advance(time.Minute)
	wantNil(t, "sweep", s.e.Sweep(s.ctx, []engine.Queue{q2}))
	s.wantCounts(q2, 0, 0, 0)
	if gs := collectGroups(t, s, q2, 10); len(gs) != 0 {
		t.Fatalf("groups after every message expired: %+v", gs)
	}
}

func testFIFOPurgeDelete(t *testing.T, s *suite) {
	q := s.queue(fifo)
	s.sendG(q, "a", "a1", "a2")
	in := s.wantBodies(q, 1, time.Hour, "a1")
	wantNil(t, "purge", s.e.Purge(s.ctx, q))
	s.wantCounts(q, 0, 0, 0)
	wantStale(t, "ack after purge", s.ack(q, in[0].Delivery)[0])
	if gs := collectGroups(t, s, q, 10); len(gs) != 0 {
		t.Fatalf("groups after purge: %+v", gs)
	}
	s.sendG(q, "a", "a3", "a4")
	s.wantBodies(q, 10, time.Minute, "a3", "a4")

	d := s.queue(fifo)
	s.sendG(d, "a", "a1")
	m := s.wantBodies(d, 1, time.Hour, "a1")
	wantNil(t, "delete", s.e.DeleteQueue(s.ctx, d.ID))
	wantStale(t, "ack after delete", s.ack(d, m[0].Delivery)[0])
	s.wantCounts(d, 0, 0, 0)
	s.receiveNone(d)
}

func testFIFOPartitionGrowth(t *testing.T, h Harness) {
	if h.NewWithPartitionRate == nil {
		t.Skip("the engine has no partitions")
	}
	e, clk := h.NewWithPartitionRate(t, 5)
	s := &suite{t: t, e: e, clk: clk, ctx: context.Background()}
	q := s.queue(fifo)
	next := map[string]int{}  // group -> next index to send
	acked := map[string]int{} // group -> next index expected
	parts := map[string]map[int]bool{}
	consume := func() {
		ms := s.receive(q, engine.MaxBatch, time.Hour)
		for _, m := range ms {
			var i int
			if _, err := fmt.Sscanf(m.Body[strings.LastIndexByte(m.Body, '/')+1:], "%d", &i); err != nil {
				t.Fatalf("body %q", m.Body)
			}
			if i != acked[m.GroupID] {
				t.Fatalf("group %s: received %d, want %d", m.GroupID, i, acked[m.GroupID])
			}
			acked[m.GroupID]++
			if parts[m.GroupID] == nil {
				parts[m.GroupID] = map[int]bool{}
			}
			parts[m.GroupID][m.Partition] = true
		}
		s.ackAll(q, ms)
	}
	// Ten long-lived groups, sent to and consumed all along while the partitions grow, plus a
	// new group every second.
	for sec := range 15 {
		groups := []string{fmt.Sprintf("new-%d", sec)}
		for g := range 10 {
			groups = append(groups, fmt.Sprintf("old-%d", g))
		}
		for range 2 {
			var msgs []engine.Message
			for _, g := range groups[:engine.MaxBatch] {
				msgs = append(msgs, engine.Message{Body: fmt.Sprintf("%s/%d", g, next[g]), GroupID: g})
				next[g]++
			}
			s.sendMsgs(q, msgs...)
		}
		g := groups[engine.MaxBatch]
		s.sendMsgs(q, engine.Message{Body: fmt.Sprintf("%s/%d", g, next[g]), GroupID: g})
		next[g]++
		if sec%2 == 1 {
			consume()
		}
		clk.Advance(1100 * time.Millisecond)
	}
	st := s.stats(q)
	if st.Partitions < 3 {
		t.Fatalf("partitions = %d, want growth", st.Partitions)
	}
	for range 500 {
		if st := s.stats(q); st.Visible+st.InFlight == 0 {
			break
		}
		consume()
	}
	for g, n := range next {
		if acked[g] != n {
			t.Fatalf("group %s: %d of %d received", g, acked[g], n)
		}
	}
	used := map[int]bool{}
	for g, ps := range parts {
		if len(ps) != 1 {
			t.Fatalf("group %s was served from partitions %v", g, ps)
		}
		for p := range ps {
			used[p] = true
		}
	}
	if len(used) < 2 {
		t.Fatalf("groups live in %d partition(s) of %d, want spread", len(used), st.Partitions)
	}
}
