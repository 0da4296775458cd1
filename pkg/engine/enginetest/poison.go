package enginetest

import (
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// Poison policies of fifo queues (engine.PoisonPolicy, docs/fifo.md): what a dead-letter does
// to the rest of its group. Each case checks the order a consumer sees the group in, whatever
// the order in which its dead-lettered messages come back.
func poisonTests() []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"PoisonContinue", testPoisonContinue},
		{"PoisonPark", testPoisonPark},
		{"PoisonParkRelease", testPoisonParkRelease},
		{"PoisonParkGroup", testPoisonParkGroup},
		{"PoisonParkGroupBackOutOfOrder", testPoisonParkGroupBackOutOfOrder},
		{"PoisonParkCancel", testPoisonParkCancel},
		{"PoisonGroupsView", testPoisonGroupsView},
		{"PoisonParkExclusive", testPoisonParkExclusive},
	}
}

func withPoison(p engine.PoisonPolicy) queueOpt { return func(q *engine.Queue) { q.OnDeadLetter = p } }

// poisonHead makes a's head reach maxReceiveCount 2 (two deliveries left to expire): the next
// receive dead-letters it.
func (s *suite) poisonHead(q engine.Queue, head string) {
	s.t.Helper()
	for range 2 {
		s.wantBodies(q, 1, 10*time.Second, head)
		s.clk.Advance(10 * time.Second)
	}
}

// groupsIn lists q's groups in state, all pages.
func (s *suite) groupsIn(q engine.Queue, state engine.GroupState) []engine.Group {
	s.t.Helper()
	var out []engine.Group
	cursor := ""
	for range 1000 {
		page, err := s.e.Groups(s.ctx, q, 2, cursor, state)
		if err != nil {
			s.t.Fatalf("Groups(%q): %v", state, err)
		}
		out = append(out, page.Groups...)
		if cursor = page.NextCursor; cursor == "" {
			return out
		}
	}
	s.t.Fatal("Groups never reached the end")
	return nil
}

func groupNames(gs []engine.Group) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.GroupID
	}
	return out
}

func (s *suite) wantGroups(q engine.Queue, state engine.GroupState, want ...string) []engine.Group {
	s.t.Helper()
	gs := s.groupsIn(q, state)
	if got := groupNames(gs); !slices.Equal(got, want) {
		s.t.Fatalf("groups in state %q: %q, want %q", state, got, want)
	}
	return gs
}

// testPoisonContinue: the default goes on with the group's next message.
func testPoisonContinue(t *testing.T, s *suite) {
	dlq := s.queue(fifo)
	q := s.queue(fifo, withRedrive(dlq, 2), withPoison(engine.PoisonContinue))
	s.sendG(q, "a", "a1", "a2")
	s.poisonHead(q, "a1")
	s.wantBodies(q, 10, time.Minute, "a2")
	s.wantGroups(q, engine.GroupParked)
}

// testPoisonPark: the group waits, later sends too, until its dead-lettered head comes back,
// at its old place, with its old sequence number.
func testPoisonPark(t *testing.T, s *suite) {
	dlq := s.queue(fifo)
	q := s.queue(fifo, withRedrive(dlq, 2), withPoison(engine.PoisonPark))
	s.sendG(q, "a", "a1", "a2", "a3")
	s.clk.Advance(time.Millisecond)
	s.sendG(q, "b", "b1")
	first := s.receive(q, 1, 10*time.Second)
	if len(first) != 1 || first[0].Body != "a1" {
		t.Fatalf("first receive %q, want a1", bodies(first))
	}
	s.clk.Advance(10 * time.Second)
	s.wantBodies(q, 1, 10*time.Second, "a1")
	s.clk.Advance(10 * time.Second)
	// a1 goes to the dead-letter queue, a parks: b1 alone, then nothing.
	s.ackAll(q, s.wantBodies(q, 10, time.Minute, "b1"))
	s.receiveNone(q)
	s.sendG(q, "a", "a4")
	s.receiveNone(q)
	gs := s.wantGroups(q, engine.GroupParked, "a")
	if g := gs[0]; g.State != engine.GroupParked || g.Messages != 3 || g.LastError != engine.RedriveReason || g.HeadReceiveCount != 0 {
		t.Fatalf("parked group %+v: want parked, 3 messages, last error %q, head receiveCount 0", g, engine.RedriveReason)
	}
	s.wantGroups(q, engine.GroupActive)
	s.wantCounts(dlq, 1, 0, 0)
	if n := s.stats(q).ParkedGroups; n != 1 {
		t.Fatalf("Stats.ParkedGroups %d, want 1", n)
	}

	if moved, _ := s.moveAll(dlq, "back", 10, to(q)); moved != 1 {
		t.Fatalf("moved %d, want 1", moved)
	}
	ms := s.wantBodies(q, 10, time.Minute, "a1", "a2", "a3", "a4")
	if ms[0].SequenceNumber != first[0].SequenceNumber || ms[0].MessageID != first[0].MessageID {
		t.Fatalf("a1 came back as %d (%s), want its old sequence number %d (%s)", ms[0].SequenceNumber, ms[0].MessageID,
			first[0].SequenceNumber, first[0].MessageID)
	}
	for i := 1; i < len(ms); i++ {
		if ms[i].SequenceNumber <= ms[i-1].SequenceNumber {
			t.Fatalf("sequence numbers out of order: %d then %d", ms[i-1].SequenceNumber, ms[i].SequenceNumber)
		}
	}
	s.wantGroups(q, engine.GroupActive, "a")
	s.wantGroups(q, engine.GroupParked)
	if n := s.stats(q).ParkedGroups; n != 0 {
		t.Fatalf("Stats.ParkedGroups %d after the move back, want 0", n)
	}
}

// testPoisonParkRelease: a release serves the group from its head at once; the
// dead-lettered message, moved back later, is a new message at its end.
func testPoisonParkRelease(t *testing.T, s *suite) {
	dlq := s.queue(fifo)
	q := s.queue(fifo, withRedrive(dlq, 2), withPoison(engine.PoisonPark))
	s.sendG(q, "a", "a1", "a2", "a3")
	s.poisonHead(q, "a1")
	s.receiveNone(q)
	wantRefusal(t, "release of an unknown group", s.e.ReleaseGroup(s.ctx, q, "zz"), engine.ErrNoSuchGroup)
	wantNil(t, "release", s.e.ReleaseGroup(s.ctx, q, "a"))
	wantRefusal(t, "second release", s.e.ReleaseGroup(s.ctx, q, "a"), engine.ErrGroupNotParked)
	s.ackAll(q, s.wantBodies(q, 10, time.Minute, "a2", "a3"))
	s.sendG(q, "a", "a4")
	s.moveAll(dlq, "back", 10, to(q))
	s.wantBodies(q, 10, time.Minute, "a4", "a1")
	wantRefusal(t, "release on a standard queue", s.e.ReleaseGroup(s.ctx, s.queue(), "a"), engine.ErrNoGroups)
}

// testPoisonParkGroup: a consumer's dead-letter sends the group's later messages after it,
// its own batch in flight included (their handles go stale); a move task brings them back in
// order, before the sends that came meanwhile, whatever batches it moves them in.
func testPoisonParkGroup(t *testing.T, s *suite) {
	dlq := s.queue(fifo)
	q := s.queue(fifo, withRedrive(dlq, 10), withPoison(engine.PoisonParkGroup))
	s.sendG(q, "a", "a1", "a2", "a3", "a4")
	s.sendG(q, "b", "b1")
	ms := s.wantBodies(q, 2, time.Minute, "a1", "a2")
	wantNil(t, "dead-letter a1", s.deadLetter(q, ms[0].Delivery, "bad"))
	wantStale(t, "ack of a2, gone after a1", s.ack(q, ms[1].Delivery)[0])
	s.ackAll(q, s.wantBodies(q, 10, time.Minute, "b1"))
	s.sendG(q, "a", "a5")
	s.receiveNone(q)
	gs := s.wantGroups(q, engine.GroupParked, "a")
	if g := gs[0]; g.Messages != 1 || g.LastError != "bad" {
		t.Fatalf("parked group %+v: want 1 message (a5), last error bad", g)
	}
	// The dead-letter queue holds the group in order, the followers marked.
	dl := s.browseAll(dlq, engine.StateVisible, 10, "")
	if !slices.Equal(dl, []string{"a1", "a2", "a3", "a4"}) {
		t.Fatalf("dead-letter queue holds %q, want a1..a4", dl)
	}
	// Back in two batches, a send to the group between them.
	res, err := s.e.MoveBatch(s.ctx, dlq, engine.MoveRequest{Tag: "back", Limit: 2, Choose: to(q)})
	if err != nil || res.Moved != 2 {
		t.Fatalf("first move batch: %+v, %v", res, err)
	}
	s.sendG(q, "a", "a6")
	s.receiveNone(q) // a3 and a4 are still out: the group waits
	s.moveAll(dlq, "back", 10, to(q))
	got := s.wantBodies(q, 10, time.Minute, "a1", "a2", "a3", "a4", "a5", "a6")
	if got[0].DeadLetter != nil {
		t.Fatalf("a moved-back message carries dead-letter info %+v", got[0].DeadLetter)
	}
	s.wantGroups(q, engine.GroupParked)
}

// testPoisonParkGroupBackOutOfOrder: messages moved back in any order take their old places.
func testPoisonParkGroupBackOutOfOrder(t *testing.T, s *suite) {
	dlq := s.queue(fifo)
	q := s.queue(fifo, withRedrive(dlq, 2), withPoison(engine.PoisonParkGroup))
	s.sendG(q, "a", "a1", "a2", "a3", "a4")
	s.poisonHead(q, "a1")
	s.receiveNone(q) // a1 dead, a2..a4 followed it
	s.wantCounts(q, 0, 0, 0)
	dl := s.wantBodies(dlq, 10, time.Second, "a1", "a2", "a3", "a4")
	if dl[0].DeadLetter == nil || dl[0].DeadLetter.Reason != engine.RedriveReason ||
		dl[1].DeadLetter == nil || dl[1].DeadLetter.Reason != engine.ParkGroupReason {
		t.Fatalf("dead-letter reasons %+v, %+v: want %q then %q", dl[0].DeadLetter, dl[1].DeadLetter, engine.RedriveReason, engine.ParkGroupReason)
	}
	s.clk.Advance(time.Second)
	pick := func(want ...string) func(engine.BrowsedMessage) (*engine.Queue, bool) {
		return func(m engine.BrowsedMessage) (*engine.Queue, bool) {
			if slices.Contains(want, m.Body) {
				return &q, false
			}
			return nil, false
		}
	}
	s.moveAll(dlq, "t1", 10, pick("a4", "a2"))
	s.receiveNone(q)
	s.moveAll(dlq, "t2", 10, pick("a3"))
	s.receiveNone(q)
	s.moveAll(dlq, "t3", 10, pick("a1"))
	s.wantBodies(q, 10, time.Minute, "a1", "a2", "a3", "a4")
}

// testPoisonParkCancel: the cancel beyond maxCancels is a dead-letter too, and parks.
func testPoisonParkCancel(t *testing.T, s *suite) {
	dlq := s.queue(fifo)
	q := s.queue(fifo, withRedrive(dlq, 10), withPoison(engine.PoisonPark), func(q *engine.Queue) { q.MaxCancels = 0 })
	s.sendG(q, "a", "a1", "a2")
	m := s.receiveOne(q, time.Minute)
	errs, err := s.e.Cancel(s.ctx, q, []engine.Delivery{m.Delivery})
	if err != nil || errs[0] != nil {
		t.Fatalf("cancel: %v %v", errs, err)
	}
	s.receiveNone(q)
	if gs := s.wantGroups(q, engine.GroupParked, "a"); gs[0].LastError != engine.CancelReason {
		t.Fatalf("parked by %q, want %q", gs[0].LastError, engine.CancelReason)
	}
	s.moveAll(dlq, "back", 10, to(q))
	s.wantBodies(q, 10, time.Minute, "a1", "a2")
}

// testPoisonGroupsView: the listing's state filter and each group's head receiveCount; a
// parked group with no message left is listed; a queue without a dead-letter queue never
// parks.
func testPoisonGroupsView(t *testing.T, s *suite) {
	dlq := s.queue(fifo)
	q := s.queue(fifo, withRedrive(dlq, 2), withPoison(engine.PoisonPark))
	s.sendG(q, "a", "a1")
	s.clk.Advance(time.Millisecond)
	s.sendG(q, "c", "c1")
	s.poisonHead(q, "a1")
	s.wantBodies(q, 10, time.Minute, "c1") // a1 dead-lettered: a parks with no message left
	all := s.wantGroups(q, "", "a", "c")
	if a := all[0]; a.State != engine.GroupParked || a.Messages != 0 || a.LastError != engine.RedriveReason {
		t.Fatalf("group %+v: want a parked with no message", a)
	}
	if c := all[1]; c.State != engine.GroupActive || !c.InFlight || c.LastError != "" || c.HeadReceiveCount != 1 {
		t.Fatalf("group %+v: want c active, in flight, head receiveCount 1", c)
	}
	s.wantGroups(q, engine.GroupParked, "a")
	s.wantGroups(q, engine.GroupActive, "c")
	if _, err := s.e.Groups(s.ctx, q, 10, "", "sleeping"); err == nil {
		t.Fatal("Groups with an unknown state answered no error")
	}

	// Head receiveCount.
	q2 := s.queue(fifo)
	s.sendG(q2, "x", "x1", "x2")
	m := s.receiveOne(q2, time.Minute)
	wantNil(t, "release", s.changeVis(q2, m.Delivery, 0))
	if gs := s.wantGroups(q2, "", "x"); gs[0].HeadReceiveCount != 1 || gs[0].State != engine.GroupActive {
		t.Fatalf("group %+v: want head receiveCount 1, active", gs[0])
	}

	// Park without a dead-letter queue does nothing.
	q3 := s.queue(fifo, withPoison(engine.PoisonPark))
	s.sendG(q3, "y", "y1", "y2")
	y := s.receiveOne(q3, time.Minute)
	wantNil(t, "dead-letter", s.deadLetter(q3, y.Delivery, "bad"))
	s.wantBodies(q3, 10, time.Minute, "y2")
}

// testPoisonParkExclusive: on an exclusive queue a parked group is served to nobody, not even
// the consumer it is bound to (whose own groups are candidates wherever they stand), until
// it is released.
func testPoisonParkExclusive(t *testing.T, s *suite) {
	dlq := s.queue(fifo)
	q := s.queue(exclusive, withRedrive(dlq, 2), withPoison(engine.PoisonPark))
	s.sendG(q, "a", "a1", "a2")
	for range 2 {
		s.getAs(q, "c1", 1, "a1") // a minute's visibility
		s.clk.Advance(time.Minute + time.Second)
	}
	s.getAs(q, "c1", 10) // a1 is dead-lettered and a parks
	s.getAs(q, "c2", 10)
	s.wantGroups(q, engine.GroupParked, "a")
	s.wantCounts(dlq, 1, 0, 0)
	wantNil(t, "release", s.e.ReleaseGroup(s.ctx, q, "a"))
	// c1's binding lapsed while a was parked (no activity for the affinity): the released
	// group binds afresh to whoever receives first, from its head.
	s.getAs(q, "c2", 10, "a2")
	s.wantBound(q, map[string]string{"a": "c2"})
}
