package enginetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// testCountsLeaveOutExpired: a message past its retention is gone (docs/api-tour.md), so no count
// includes it and it is not the oldest, whether or not a sweep or a receive removed it yet —
// visible, in flight and delayed, on standard and fifo queues, with live messages behind the
// expired ones.
func testCountsLeaveOutExpired(t *testing.T, s *suite) {
	hour, twoMin := time.Hour, 2*time.Minute
	for _, typ := range []engine.Type{engine.Standard, engine.FIFO} {
		q := s.queue(withRetention(time.Minute), func(q *engine.Queue) { q.Type = typ })
		n := 0
		send := func(delay *time.Duration) {
			m := engine.Message{Body: fmt.Sprint("m", n)}
			if typ == engine.FIFO {
				m.GroupID = fmt.Sprint("g", n) // a group each: all may be in flight together
			} else {
				m.Delay = delay
			}
			n++
			s.sendMsgs(q, m)
		}
		// At 0: three, one received (in flight for an hour); on standard one delayed 2 min.
		for range 3 {
			send(nil)
		}
		s.receive(q, 1, hour)
		if typ == engine.Standard {
			send(&twoMin)
		}
		s.clk.Advance(30 * time.Second)
		// At 30 s: two more, one received; on standard one more delayed.
		young := s.clk.Now()
		send(nil)
		send(nil)
		if typ == engine.Standard {
			send(&twoMin)
			s.wantCounts(q, 4, 1, 2)
		} else {
			s.wantCounts(q, 4, 1, 0)
		}
		s.receive(q, 1, hour) // the oldest visible one: sent at 0
		s.clk.Advance(31 * time.Second)
		// At 61 s everything sent at 0 is gone: two visible remain (sent at 30 s), and the
		// delayed one sent at 30 s on standard.
		delayed := int64(0)
		if typ == engine.Standard {
			delayed = 1
		}
		s.wantCounts(q, 2, 0, delayed)
		if st := s.stats(q); !st.OldestSentAt.Equal(young) {
			t.Fatalf("%s: oldest sent at %v, want %v (the oldest unexpired)", typ, st.OldestSentAt, young)
		}
		s.receive(q, 1, hour)
		s.wantCounts(q, 1, 1, delayed)
		s.clk.Advance(30 * time.Second)
		s.wantCounts(q, 0, 0, 0)
		if st := s.stats(q); !st.OldestSentAt.IsZero() {
			t.Fatalf("%s: oldest sent at %v with every message expired", typ, st.OldestSentAt)
		}
		wantNil(t, "sweep", s.e.Sweep(s.ctx, []engine.Queue{q}))
		s.wantCounts(q, 0, 0, 0)
	}
}
