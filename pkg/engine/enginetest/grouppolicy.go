package enginetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// Group policies of fifo queues (engine/grouppolicy.go): under "exclusive" a group is bound to
// the consumer that received its first batch, for as long as the group stays active within
// the affinity; a consumer holds at most its cap of groups; an endGroup message ends the
// binding once settled. "sequenced" (the default) binds nothing.
func groupPolicyTests(h Harness) []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"GroupExclusiveBinds", testGroupExclusiveBinds},
		{"GroupExclusiveOnlyBoundConsumer", testGroupExclusiveOnlyBound},
		{"GroupExclusiveRebindAfterSilence", testGroupExclusiveRebind},
		{"GroupExclusiveCap", testGroupExclusiveCap},
		{"GroupExclusiveIdleBindingEnds", testGroupExclusiveIdle},
		{"GroupExclusiveEndGroup", testGroupExclusiveEndGroup},
		{"GroupExclusiveEndGroupRedriven", testGroupExclusiveEndGroupRedriven},
		{"GroupSequencedUnchanged", testGroupSequencedUnchanged},
		{"GroupExclusiveCapAcrossPartitions", func(t *testing.T, _ *suite) { testGroupExclusiveCapPartitions(t, h) }},
	}
}

// exclusiveAffinity is the affinity of the test queues (not the default, so that the engines
// are seen to read the setting).
const exclusiveAffinity = 30 * time.Second

func exclusive(q *engine.Queue) {
	q.Type, q.GroupPolicy, q.GroupAffinity = engine.FIFO, engine.GroupExclusive, exclusiveAffinity
}

// getAs receives up to max messages as consumer id and checks their bodies.
func (s *suite) getAs(q engine.Queue, id string, max int, want ...string) []engine.Received {
	s.t.Helper()
	res := s.receiveAs(q, id, 0, max, time.Minute)
	var got []string
	for _, m := range res.Messages {
		got = append(got, m.Body)
	}
	if !slices.Equal(got, want) {
		s.t.Fatalf("%s received %q, want %q", id, got, want)
	}
	return res.Messages
}

// wantBound checks the consumer each listed group is bound to (groups absent from want are
// not checked; "" wants no binding).
func (s *suite) wantBound(q engine.Queue, want map[string]string) {
	s.t.Helper()
	page, err := s.e.Groups(s.ctx, q, 100, "", "")
	if err != nil {
		s.t.Fatalf("Groups: %v", err)
	}
	seen := 0
	for _, g := range page.Groups {
		if c, ok := want[g.GroupID]; ok {
			seen++
			if g.ConsumerID != c {
				s.t.Fatalf("group %s is bound to %q, want %q", g.GroupID, g.ConsumerID, c)
			}
		}
	}
	if seen != len(want) {
		s.t.Fatalf("Groups listed %d of the %d groups checked: %+v", seen, len(want), page.Groups)
	}
}

func testGroupExclusiveBinds(t *testing.T, s *suite) {
	q := s.queue(exclusive)
	s.sendG(q, "g1", "a1", "a2")
	if _, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute}); !errors.Is(err, engine.ErrConsumerRequired) {
		t.Fatalf("a receive without a consumer: %v, want ErrConsumerRequired", err)
	}
	s.wantBound(q, map[string]string{"g1": ""})
	got := s.getAs(q, "c1", 1, "a1")
	s.wantBound(q, map[string]string{"g1": "c1"})
	s.ackAll(q, got)
	s.getAs(q, "c2", 10) // the group is c1's
	s.getAs(q, "c1", 10, "a2")
}

func testGroupExclusiveOnlyBound(t *testing.T, s *suite) {
	q := s.queue(exclusive)
	s.sendG(q, "g1", "a1")
	s.sendG(q, "g2", "b1")
	s.ackAll(q, s.getAs(q, "c1", 1, "a1"))
	s.ackAll(q, s.getAs(q, "c2", 10, "b1"))
	s.sendG(q, "g2", "b2", "b3")
	s.sendG(q, "g1", "a2", "a3")
	s.wantBound(q, map[string]string{"g1": "c1", "g2": "c2"})
	// Each consumer gets its own group's messages only, in order (g2's head is the oldest).
	s.ackAll(q, s.getAs(q, "c1", 1, "a2"))
	s.ackAll(q, s.getAs(q, "c2", 1, "b2"))
	s.ackAll(q, s.getAs(q, "c2", 10, "b3"))
	s.ackAll(q, s.getAs(q, "c1", 10, "a3"))
	s.getAs(q, "c3", 10)
}

func testGroupExclusiveRebind(t *testing.T, s *suite) {
	q := s.queue(exclusive)
	s.sendG(q, "g1", "a1", "a2")
	// c1 receives and falls silent: its delivery lapses, the group stays c1's for the affinity.
	if _, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 1, Visibility: 5 * time.Second,
		Consumer: &engine.ConsumerOf{ID: "c1"}}); err != nil {
		t.Fatal(err)
	}
	s.clk.Advance(exclusiveAffinity - time.Millisecond)
	s.getAs(q, "c2", 10)
	s.wantBound(q, map[string]string{"g1": "c1"})
	s.clk.Advance(time.Millisecond)
	got := s.getAs(q, "c2", 10, "a1", "a2")
	s.wantBound(q, map[string]string{"g1": "c2"})
	s.ackAll(q, got[:1])
	s.sendG(q, "g1", "a3")
	s.ackAll(q, got[1:])
	s.getAs(q, "c1", 10) // c1 is back, the group is c2's now
	s.getAs(q, "c2", 10, "a3")
}

func testGroupExclusiveCap(t *testing.T, s *suite) {
	q := s.queue(exclusive, func(q *engine.Queue) { q.MaxGroupsPerConsumer = 2 })
	s.sendG(q, "g1", "a1")
	s.sendG(q, "g2", "b1")
	s.sendG(q, "g3", "c1")
	got := s.getAs(q, "w1", 10, "a1", "b1") // at its cap after two groups
	s.ackAll(q, got)
	s.getAs(q, "w1", 10)
	s.sendG(q, "g4", "d1")
	s.sendG(q, "g1", "a2")
	s.getAs(q, "w1", 10, "a2") // still its own groups
	s.getAs(q, "w2", 10, "c1", "d1")
	s.wantBound(q, map[string]string{"g1": "w1", "g3": "w2", "g4": "w2"})
}

func testGroupExclusiveIdle(t *testing.T, s *suite) {
	q := s.queue(exclusive)
	s.sendG(q, "g1", "a1")
	s.ackAll(q, s.getAs(q, "c1", 10, "a1"))
	s.clk.Advance(exclusiveAffinity / 2)
	s.sendG(q, "g1", "a2")
	s.getAs(q, "c2", 10) // bound: the ack was activity
	s.clk.Advance(exclusiveAffinity/2 + time.Millisecond)
	s.wantBound(q, map[string]string{"g1": ""})
	s.getAs(q, "c2", 10, "a2")
	s.wantBound(q, map[string]string{"g1": "c2"})
}

func testGroupExclusiveEndGroup(t *testing.T, s *suite) {
	q := s.queue(exclusive)
	s.sendMsgs(q, engine.Message{Body: "a1", GroupID: "g1", EndGroup: true},
		engine.Message{Body: "a2", GroupID: "g1"}, engine.Message{Body: "a3", GroupID: "g1", EndGroup: true},
		engine.Message{Body: "a4", GroupID: "g1"})
	got := s.getAs(q, "c1", 1, "a1")
	if err := s.changeVis(q, got[0].Delivery, 0); err != nil { // released: not settled
		t.Fatal(err)
	}
	s.getAs(q, "c2", 10)
	s.ackAll(q, s.getAs(q, "c1", 1, "a1"))
	s.wantBound(q, map[string]string{"g1": ""})
	got = s.getAs(q, "c2", 2, "a2", "a3")
	s.ackAll(q, got[:1])
	if err := s.deadLetter(q, got[1].Delivery, ""); err != nil { // a dead-letter settles it too
		t.Fatal(err)
	}
	s.wantBound(q, map[string]string{"g1": ""})
	s.getAs(q, "c3", 10, "a4")
}

// testGroupExclusiveEndGroupRedriven: an endGroup message moved to the dead-letter queue by a
// receive (maxReceiveCount) is settled too: the binding ends.
func testGroupExclusiveEndGroupRedriven(t *testing.T, s *suite) {
	dlq := s.queue(fifo)
	q := s.queue(exclusive, withRedrive(dlq, 1))
	s.sendMsgs(q, engine.Message{Body: "a1", GroupID: "g1", EndGroup: true})
	if _, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 1, Visibility: 5 * time.Second,
		Consumer: &engine.ConsumerOf{ID: "c1"}}); err != nil {
		t.Fatal(err)
	}
	s.clk.Advance(6 * time.Second) // lapsed: received once, it is redriven by c1's next receive
	s.getAs(q, "c1", 10)
	s.sendG(q, "g1", "a2")
	s.getAs(q, "c2", 10, "a2")
}

func testGroupSequencedUnchanged(t *testing.T, s *suite) {
	q := s.queue(fifo)
	s.sendMsgs(q, engine.Message{Body: "a1", GroupID: "g1"}, engine.Message{Body: "a2", GroupID: "g1", EndGroup: true},
		engine.Message{Body: "a3", GroupID: "g1"})
	s.ackAll(q, s.getAs(q, "c1", 1, "a1"))
	s.wantBound(q, map[string]string{"g1": ""})
	s.ackAll(q, s.getAs(q, "c2", 1, "a2"))
	s.ackAll(q, s.wantBodies(q, 10, time.Minute, "a3"))
}

// testGroupExclusiveCapPartitions: on a queue grown to several partitions, a consumer's cap
// counts its groups in every partition, not per partition.
func testGroupExclusiveCapPartitions(t *testing.T, h Harness) {
	if h.NewWithPartitionRate == nil {
		t.Skip("the engine has no partitions")
	}
	e, clk := h.NewWithPartitionRate(t, 5)
	s := &suite{t: t, e: e, clk: clk, ctx: context.Background()}
	q := s.queue(exclusive, func(q *engine.Queue) { q.MaxGroupsPerConsumer = 3 })
	// New groups every second while the send rate grows the queue: they spread over the
	// partitions.
	for sec := range 8 {
		for half := range 2 {
			var msgs []engine.Message
			for i := range engine.MaxBatch {
				msgs = append(msgs, engine.Message{Body: "m", GroupID: fmt.Sprintf("g-%d-%d-%d", sec, half, i)})
			}
			s.sendMsgs(q, msgs...)
		}
		clk.Advance(time.Second)
	}
	if st := s.stats(q); st.Partitions < 2 {
		t.Fatalf("partitions = %d, want growth", st.Partitions)
	}
	drain := func(id string) (map[string]bool, map[int]bool) {
		groups, parts := map[string]bool{}, map[int]bool{}
		for range 20 {
			got := s.receiveAs(q, id, 0, engine.MaxBatch, time.Minute).Messages
			if len(got) == 0 {
				break
			}
			for _, m := range got {
				groups[m.GroupID], parts[m.Partition] = true, true
			}
			s.ackAll(q, got)
		}
		return groups, parts
	}
	g1, _ := drain("w1")
	if len(g1) != 3 {
		t.Fatalf("w1 (cap 3) received from %d groups: %v", len(g1), g1)
	}
	g2, _ := drain("w2")
	if len(g2) != 3 {
		t.Fatalf("w2 (cap 3) received from %d groups: %v", len(g2), g2)
	}
	for g := range g2 {
		if g1[g] {
			t.Fatalf("group %s went to both consumers", g)
		}
	}
}
