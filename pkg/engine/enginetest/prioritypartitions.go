package enginetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// testPriorityPartitions: on a queue spread over several partitions, a receive still returns
// the highest-priority visible messages first, wherever they are stored: with a backlog of
// priority 0 in every partition, each receive of one message takes a priority-9 one while any
// is visible, then the priority-5 ones, and a batch takes them all before any of priority 0.
func testPriorityPartitions(t *testing.T, h Harness) {
	if h.NewWithPartitionRate == nil {
		t.Skip("the engine has no partitions")
	}
	e, clk := h.NewWithPartitionRate(t, 5)
	s := &suite{t: t, e: e, clk: clk, ctx: context.Background()}
	q := s.queue()
	for range 6 { // 30 a second against a rate of 5: partitions grow
		for range 3 {
			s.send(q, "0", "0", "0", "0", "0", "0", "0", "0", "0", "0")
		}
		clk.Advance(1100 * time.Millisecond)
	}
	if st := s.stats(q); st.Partitions < 2 {
		t.Fatalf("partitions = %d, want several", st.Partitions)
	}
	for i := range 8 {
		s.sendMsgs(q, pmsg(fmt.Sprintf("p9-%d", i), 9))
		s.sendMsgs(q, pmsg(fmt.Sprintf("p5-%d", i), 5))
	}
	for i := range 8 {
		if m := s.receiveOne(q, time.Hour); m.Priority != 9 {
			t.Fatalf("receive %d took %s/%d with priority-9 messages visible (partition %d of %d)",
				i, m.Body, m.Priority, m.Partition, s.stats(q).Partitions)
		}
	}
	got := s.receive(q, engine.MaxBatch, time.Hour)
	for i, m := range got {
		if want := 5; i < 8 && m.Priority != want || i >= 8 && m.Priority != 0 {
			t.Fatalf("a batch took %s, want the eight of priority 5 first", bodiesOf(got))
		}
	}
	if len(got) != engine.MaxBatch {
		t.Fatalf("a batch took %d, want %d", len(got), engine.MaxBatch)
	}
}
