package enginetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Move tasks' primitive (engine.Mover, docs/redrive.md): a moved message keeps its id, body,
// attributes and group, restarts at receiveCount 0, leaves the source only while visible, and
// the task's count is exact.
func moveTests(h Harness) []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"MoveAll", testMoveAll},
		{"MoveBackFromDeadLetter", testMoveBack},
		{"MoveOnlyVisibleAndChosen", testMoveChosen},
		{"MoveSomeOfNeverReceived", testMoveSome},
		{"MoveFIFO", testMoveFIFO},
		{"MoveWhileReceiving", testMoveWhileReceiving},
		{"MoveSameInstant", testMoveSameInstant},
		{"MoveStoredBytes", func(t *testing.T, s *suite) { testMoveStoredBytes(t, s, h) }},
		{"MoveDelete", func(t *testing.T, s *suite) { testMoveDelete(t, s, h) }},
		{"MoveDeleteFIFO", testMoveDeleteFIFO},
		{"MoveBatchBytesBound", testMoveBatchBytesBound},
	}
}

// moveAll runs batches of limit from the start until the scan ends; it answers moved, failed.
func (s *suite) moveAll(src engine.Queue, tag string, limit int, choose func(engine.BrowsedMessage) (*engine.Queue, bool)) (int, int) {
	s.t.Helper()
	moved, failed, cursor := 0, 0, ""
	for range 10_000 {
		res, err := s.e.MoveBatch(s.ctx, src, engine.MoveRequest{Tag: tag, Cursor: cursor, Limit: limit, Choose: choose})
		if err != nil {
			s.t.Fatalf("MoveBatch: %v", err)
		}
		moved, failed = moved+res.Moved, failed+res.Failed
		if cursor = res.NextCursor; cursor == "" {
			return moved, failed
		}
	}
	s.t.Fatal("MoveBatch never reached the end")
	return 0, 0
}

func (s *suite) wantMovedCount(src engine.Queue, tag string, n int64) {
	s.t.Helper()
	got, err := s.e.MovedCount(s.ctx, src, tag)
	if err != nil {
		s.t.Fatalf("MovedCount: %v", err)
	}
	if got != n {
		s.t.Fatalf("MovedCount = %d, want %d", got, n)
	}
}

func to(q engine.Queue) func(engine.BrowsedMessage) (*engine.Queue, bool) {
	return func(engine.BrowsedMessage) (*engine.Queue, bool) { return &q, false }
}

// drain receives and acknowledges everything q holds, answering the messages by id.
func (s *suite) drain(q engine.Queue) map[ids.ID]engine.Received {
	s.t.Helper()
	out := map[ids.ID]engine.Received{}
	for {
		ms := s.receive(q, engine.MaxBatch, time.Minute)
		if len(ms) == 0 {
			return out
		}
		for _, m := range ms {
			if _, dup := out[m.MessageID]; dup {
				s.t.Fatalf("message %s received twice", m.MessageID)
			}
			out[m.MessageID] = m
		}
		s.ack(q, deliveries(ms)...)
	}
}

func testMoveAll(t *testing.T, s *suite) {
	src, dst := s.queue(), s.queue()
	var msgs []engine.Message
	for i := range 25 {
		msgs = append(msgs, engine.Message{Body: fmt.Sprintf("m%d", i), Attributes: map[string]string{"i": fmt.Sprint(i)}})
	}
	sent := s.sendMsgs(src, msgs...)
	// Two of them were received and released: visible again, with a receive count.
	ms := s.receive(src, 2, time.Minute)
	for _, m := range ms {
		wantNil(t, "release", s.changeVis(src, m.Delivery, 0))
	}
	moved, failed := s.moveAll(src, "t1", 7, to(dst))
	if moved != 25 || failed != 0 {
		t.Fatalf("moved %d, failed %d; want 25, 0", moved, failed)
	}
	s.wantMovedCount(src, "t1", 25)
	s.wantMovedCount(src, "other", 0)
	s.wantCounts(src, 0, 0, 0)
	s.wantCounts(dst, 25, 0, 0)
	got := s.drain(dst)
	for i, id := range sent {
		m, ok := got[id]
		if !ok {
			t.Fatalf("message %d (%s) is not in the destination", i, id)
		}
		if m.Body != msgs[i].Body || m.Attributes["i"] != fmt.Sprint(i) || m.ReceiveCount != 1 || m.DeadLetter != nil {
			t.Fatalf("moved message %d = %+v; want body %q, attribute i=%d, receiveCount 1, no dead-letter info", i, m, msgs[i].Body, i)
		}
	}
	wantNil(t, "ForgetMoved", s.e.ForgetMoved(s.ctx, src, "t1"))
	s.wantMovedCount(src, "t1", 0)
	// The source's receipt handles went stale with the move.
	wantStale(t, "ack of a moved message's old handle", s.ack(src, ms[0].Delivery)[0])
}

func testMoveBack(t *testing.T, s *suite) {
	dlq := s.queue()
	a := s.queue(withRedrive(dlq, 1))
	b := s.queue(withRedrive(dlq, 1))
	ia := s.send(a, "from a")
	ib := s.send(b, "from b")
	wantNil(t, "dead-letter a", s.deadLetter(a, s.receiveOne(a, time.Minute).Delivery, "bad"))
	wantNil(t, "dead-letter b", s.deadLetter(b, s.receiveOne(b, time.Minute).Delivery, ""))
	s.send(dlq, "sent to the dead-letter queue directly")
	queues := map[ids.ID]engine.Queue{a.ID: a, b.ID: b}
	back := func(m engine.BrowsedMessage) (*engine.Queue, bool) {
		if m.DeadLetter == nil {
			return nil, true
		}
		q, ok := queues[m.DeadLetter.SourceQueue]
		if !ok {
			return nil, true
		}
		return &q, false
	}
	moved, failed := s.moveAll(dlq, "back", 10, back)
	if moved != 2 || failed != 1 {
		t.Fatalf("moved %d, failed %d; want 2, 1", moved, failed)
	}
	s.wantCounts(dlq, 1, 0, 0)
	for q, id := range map[engine.Queue]ids.ID{a: ia[0], b: ib[0]} {
		m := s.receiveOne(q, time.Minute)
		if m.MessageID != id || m.ReceiveCount != 1 || m.DeadLetter != nil {
			t.Fatalf("moved back: %+v; want id %s, receiveCount 1, no dead-letter info", m, id)
		}
	}
}

func testMoveChosen(t *testing.T, s *suite) {
	src, dst := s.queue(), s.queue()
	long := time.Hour
	s.sendMsgs(src, engine.Message{Body: "delayed", Delay: &long})
	s.send(src, "in flight")
	inflight := s.receiveOne(src, time.Minute)
	s.sendMsgs(src, engine.Message{Body: "keep", Attributes: map[string]string{"k": "no"}},
		engine.Message{Body: "move", Attributes: map[string]string{"k": "yes"}},
		engine.Message{Body: "fail", Attributes: map[string]string{"k": "fail"}})
	choose := func(m engine.BrowsedMessage) (*engine.Queue, bool) {
		switch m.Attributes["k"] {
		case "yes":
			return &dst, false
		case "fail":
			return nil, true
		}
		return nil, false
	}
	moved, failed := s.moveAll(src, "t", 10, choose)
	if moved != 1 || failed != 1 {
		t.Fatalf("moved %d, failed %d; want 1, 1", moved, failed)
	}
	s.wantCounts(src, 2, 1, 1)
	if m := s.receiveOne(dst, time.Minute); m.Body != "move" {
		t.Fatalf("destination holds %q, want move", m.Body)
	}
	// A message whose deadline passed is visible again, and moves.
	s.clk.Advance(2 * time.Minute)
	moved, _ = s.moveAll(src, "t", 10, func(m engine.BrowsedMessage) (*engine.Queue, bool) {
		if m.MessageID == inflight.MessageID {
			return &dst, false
		}
		return nil, false
	})
	if moved != 1 {
		t.Fatalf("moved %d of the released message, want 1", moved)
	}
	s.wantMovedCount(src, "t", 2)
	wantStale(t, "old handle", s.ack(src, inflight.Delivery)[0])
}

// testMoveSome moves every other never-received message: the rest keep their order and are
// all still there.
func testMoveSome(t *testing.T, s *suite) {
	src, dst := s.queue(), s.queue()
	var bodies []string
	for i := range 40 {
		bodies = append(bodies, fmt.Sprintf("%02d", i))
		s.send(src, bodies[i]) // one by one: distinct send times, one order
		s.clk.Advance(time.Millisecond)
	}
	odd := func(m engine.BrowsedMessage) (*engine.Queue, bool) {
		if m.Body[1]%2 == 1 {
			return &dst, false
		}
		return nil, false
	}
	moved, _ := s.moveAll(src, "t", 6, odd)
	if moved != 20 {
		t.Fatalf("moved %d, want 20", moved)
	}
	var left []string
	for {
		ms := s.receive(src, 1, time.Minute)
		if len(ms) == 0 {
			break
		}
		left = append(left, ms[0].Body)
		s.ack(src, ms[0].Delivery)
	}
	var want []string
	for i, b := range bodies {
		if i%2 == 0 {
			want = append(want, b)
		}
	}
	if !slices.Equal(left, want) {
		t.Fatalf("left in the source, in receive order: %v; want %v", left, want)
	}
	if n := len(s.drain(dst)); n != 20 {
		t.Fatalf("destination holds %d, want 20", n)
	}
}

func testMoveFIFO(t *testing.T, s *suite) {
	src, dst := s.queue(fifo), s.queue(fifo)
	s.sendG(src, "g1", "a1", "a2", "a3")
	s.sendG(src, "g2", "b1", "b2")
	// g2's head is in flight: its other message is not moved out from under it.
	b1 := s.wantBodies(src, 1, time.Minute, "a1")
	moveG := func(g string) func(engine.BrowsedMessage) (*engine.Queue, bool) {
		return func(m engine.BrowsedMessage) (*engine.Queue, bool) {
			if m.GroupID == g {
				return &dst, false
			}
			return nil, false
		}
	}
	moved, _ := s.moveAll(src, "t", 10, moveG("g2"))
	if moved != 2 {
		t.Fatalf("moved %d of g2, want 2", moved)
	}
	// g1's remaining messages stay, in order, behind its message in flight.
	s.receiveNoneFIFOGroup(src, "g1")
	s.ackAll(src, b1)
	got := s.wantBodies(src, 10, time.Minute, "a2", "a3")
	s.ackAll(src, got)
	got = s.wantBodies(dst, 10, time.Minute, "b1", "b2")
	for _, m := range got {
		if m.GroupID != "g2" || m.ReceiveCount != 1 {
			t.Fatalf("moved fifo message %+v; want group g2, receiveCount 1", m)
		}
	}
}

// receiveNoneFIFOGroup checks that a receive hands out nothing of group g.
func (s *suite) receiveNoneFIFOGroup(q engine.Queue, g string) {
	s.t.Helper()
	for _, m := range s.receive(q, engine.MaxBatch, time.Minute) {
		if m.GroupID == g {
			s.t.Fatalf("received %q of group %s while its batch is in flight", m.Body, g)
		}
	}
}

// testMoveWhileReceiving moves while consumers receive from the source: every message ends up
// received exactly once, from the source or from the destination.
func testMoveWhileReceiving(t *testing.T, s *suite) {
	src, dst := s.queue(), s.queue()
	const n = 300
	var all []ids.ID
	for i := 0; i < n; i += engine.MaxBatch {
		var msgs []engine.Message
		for j := range engine.MaxBatch {
			msgs = append(msgs, engine.Message{Body: fmt.Sprint(i + j)})
		}
		all = append(all, s.sendMsgs(src, msgs...)...)
	}
	var mu sync.Mutex
	fromSrc := map[ids.ID]bool{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := s.e.Receive(s.ctx, src, engine.ReceiveRequest{Max: 5, Visibility: time.Hour})
				if err != nil {
					t.Errorf("Receive: %v", err)
					return
				}
				mu.Lock()
				for _, m := range res.Messages {
					fromSrc[m.MessageID] = true
				}
				mu.Unlock()
			}
		}()
	}
	moved, _ := s.moveAll(src, "t", 20, to(dst))
	close(stop)
	wg.Wait()
	// Whatever the consumers had not taken yet.
	for _, m := range s.receive(src, engine.MaxBatch, time.Hour) {
		fromSrc[m.MessageID] = true
	}
	got := s.drain(dst)
	if moved != len(got) {
		t.Fatalf("MoveBatch counted %d moved, the destination holds %d", moved, len(got))
	}
	for _, id := range all {
		if fromSrc[id] == (got[id].MessageID == id) {
			t.Fatalf("message %s: received from the source %v, moved %v; want exactly one", id, fromSrc[id], got[id].MessageID == id)
		}
	}
}

func testMoveStoredBytes(t *testing.T, s *suite, h Harness) {
	b := &bytesSuite{suite: s, h: h, project: ids.New()}
	src, dst := b.queue(), b.queue()
	b.sendMsgs(src, engine.Message{Body: "aaa"}, engine.Message{Body: "b", Attributes: map[string]string{"k": "vv"}})
	b.want("send", 7)
	// A move within the project changes nothing of its stored bytes, however full it is.
	dst.MaxStoredBytes = 7
	moved, _ := s.moveAll(src, "t", 1, to(dst))
	if moved != 2 {
		t.Fatalf("moved %d, want 2", moved)
	}
	b.want("after the move", 7)
	s.drain(dst)
	b.want("after draining the destination", 0)
}

// testMoveSameInstant: messages that became visible at the same instant (released together,
// as dead-lettered ones arriving in one script are) all move, in batches smaller than their
// number — each batch resumes after a cursor message the batch itself moved away.
func testMoveSameInstant(t *testing.T, s *suite) {
	src, dst := s.queue(), s.queue()
	const n = 30
	var msgs []engine.Message
	for i := range n {
		msgs = append(msgs, engine.Message{Body: fmt.Sprintf("m%d", i)})
	}
	s.sendMsgs(src, msgs...)
	for {
		ms := s.receive(src, engine.MaxBatch, time.Minute)
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			wantNil(t, "release", s.changeVis(src, m.Delivery, time.Minute))
		}
	}
	s.clk.Advance(2 * time.Minute) // every one visible again, all at the same instant
	moved, failed := s.moveAll(src, "t1", 7, to(dst))
	if moved != n || failed != 0 {
		t.Fatalf("moved %d, failed %d; want %d, 0", moved, failed, n)
	}
	s.wantCounts(src, 0, 0, 0)
	s.wantCounts(dst, n, 0, 0)
}

// discardIf deletes the messages whose attribute k is v and leaves the others.
func discardIf(k, v string) func(engine.BrowsedMessage) (*engine.Queue, bool) {
	return func(m engine.BrowsedMessage) (*engine.Queue, bool) {
		if m.Attributes[k] == v {
			return engine.Discard, false
		}
		return nil, false
	}
}

// testMoveDelete: a delete task (engine.Discard) deletes the chosen visible messages, counts
// them under its tag, leaves the others and messages in flight alone, and gives their bytes
// back to the project.
func testMoveDelete(t *testing.T, s *suite, h Harness) {
	b := &bytesSuite{suite: s, h: h, project: ids.New()}
	src := b.queue()
	var msgs []engine.Message
	for i := range 20 {
		msgs = append(msgs, engine.Message{Body: "x", Attributes: map[string]string{"k": fmt.Sprint(i % 2)}})
	}
	sent := b.sendMsgs(src, msgs...)
	b.want("send", 20*3)
	// One of the chosen ones is in flight: it stays.
	inFlight := s.receive(src, 1, time.Minute)
	if len(inFlight) != 1 {
		t.Fatalf("received %d, want 1", len(inFlight))
	}
	first := inFlight[0].Attributes["k"]
	deleted, failed := s.moveAll(src, "del", 3, discardIf("k", first))
	if deleted != 9 || failed != 0 {
		t.Fatalf("deleted %d, failed %d; want 9, 0", deleted, failed)
	}
	s.wantMovedCount(src, "del", 9)
	s.wantCounts(src, 10, 1, 0)
	b.want("after the delete", 11*3)
	got := s.drain(src)
	for i, id := range sent {
		_, ok := got[id]
		if want := msgs[i].Attributes["k"] != first; ok != want && id != inFlight[0].MessageID {
			t.Fatalf("message %d (k=%s) present %v after deleting k=%s", i, msgs[i].Attributes["k"], ok, first)
		}
	}
	// The message that was in flight is still settled by its handle.
	wantNil(t, "ack of the message in flight", s.ack(src, inFlight[0].Delivery)[0])
}

// testMoveDeleteFIFO: a delete task on a fifo queue deletes a group's visible messages and
// the group goes on with what is left, in order.
func testMoveDeleteFIFO(t *testing.T, s *suite) {
	src := s.queue(fifo)
	s.sendG(src, "g1", "a1", "a2", "a3")
	s.sendG(src, "g2", "b1", "b2")
	del := func(m engine.BrowsedMessage) (*engine.Queue, bool) {
		if m.GroupID == "g2" || m.Body == "a2" {
			return engine.Discard, false
		}
		return nil, false
	}
	deleted, _ := s.moveAll(src, "t", 2, del)
	if deleted != 3 {
		t.Fatalf("deleted %d, want 3", deleted)
	}
	s.wantMovedCount(src, "t", 3)
	s.ackAll(src, s.wantBodies(src, 10, time.Minute, "a1", "a3"))
	s.wantCounts(src, 0, 0, 0)
}

// testMoveBatchBytesBound: a batch reads at most MaxMoveBatchBytes of messages (at least one),
// however many it may examine, and the batches still reach every message: the largest
// messages, from the never-received list and from the receive sets (released ones), with and
// without a move.
func testMoveBatchBytesBound(t *testing.T, s *suite) {
	for _, typ := range []engine.Type{engine.Standard, engine.FIFO} {
		t.Run(string(typ), func(t *testing.T) {
			var src engine.Queue
			if typ == engine.FIFO {
				src = s.queue(fifo)
			} else {
				src = s.queue()
			}
			dst := s.queue()
			if typ == engine.FIFO {
				dst = s.queue(fifo)
			}
			big := strings.Repeat("b", engine.DefaultMaxMessageBytes-10)
			const n = 40 // 10 MiB: more than two batches' worth
			for i := range n {
				m := engine.Message{Body: big, Attributes: map[string]string{"i": fmt.Sprint(i)}}
				if typ == engine.FIFO {
					m.GroupID = fmt.Sprint("g", i%4)
				}
				s.sendMsgs(src, m)
			}
			// Some are received and released: they sit in the receive sets, not the list.
			for _, m := range s.receive(src, 3, time.Minute) {
				wantNil(t, "release", s.changeVis(src, m.Delivery, 0))
			}
			// Leaving everything: each batch reads within the bound, and the scan ends.
			examined, cursor, batches := 0, "", 0
			for {
				bytes := 0
				res, err := s.e.MoveBatch(s.ctx, src, engine.MoveRequest{Tag: "look", Cursor: cursor, Limit: engine.MaxMoveBatch,
					Choose: func(m engine.BrowsedMessage) (*engine.Queue, bool) {
						bytes += len(m.Body) + 1 + len(m.Attributes["i"])
						return nil, false
					}})
				if err != nil {
					t.Fatalf("MoveBatch: %v", err)
				}
				if bytes > engine.MaxMoveBatchBytes || res.Examined == 0 && res.NextCursor != "" {
					t.Fatalf("a batch read %d messages, %d bytes; bound %d bytes, at least one message", res.Examined, bytes, engine.MaxMoveBatchBytes)
				}
				examined, batches = examined+res.Examined, batches+1
				if cursor = res.NextCursor; cursor == "" {
					break
				}
			}
			if examined != n || batches < 3 {
				t.Fatalf("the scan examined %d of %d messages in %d batches; want all, in 3 or more", examined, n, batches)
			}
			// Moving everything: all of them arrive.
			moved, _ := s.moveAll(src, "t", engine.MaxMoveBatch, to(dst))
			if moved != n {
				t.Fatalf("moved %d of %d", moved, n)
			}
			s.wantCounts(dst, n, 0, 0)
		})
	}
}
