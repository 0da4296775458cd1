package enginetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
)

// Consumer backlogs (docs/delivery-options.md#consumers-backlogs-and-fairness): a consumer never
// holds more than its maxBacklog unsettled messages; settlement, lapse and purge free its room; the
// consumers list pages exactly.
func consumerTests(Harness) []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"ConsumerBacklogBound", testConsumerBacklogBound},
		{"ConsumerBacklogFreedBySettlement", testConsumerBacklogSettlement},
		{"ConsumerBacklogFreedByLapseAndPurge", testConsumerBacklogLapse},
		{"ConsumerBacklogConcurrent", testConsumerBacklogConcurrent},
		{"ConsumersList", testConsumersList},
	}
}

func (s *suite) receiveAs(q engine.Queue, id string, bound, max int, vis time.Duration) engine.ReceiveResult {
	s.t.Helper()
	res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: max, Visibility: vis,
		Consumer: &engine.ConsumerOf{ID: id, MaxBacklog: bound}})
	if err != nil {
		s.t.Fatalf("Receive as %s: %v", id, err)
	}
	return res
}

// settled reports a successful settlement as the API does after every tagged one.
func (s *suite) settled(q engine.Queue, d engine.Delivery, until time.Time) {
	s.t.Helper()
	if err := s.e.Settled(s.ctx, q, []engine.HeldChange{{Delivery: d, Until: until}}); err != nil {
		s.t.Fatalf("Settled: %v", err)
	}
}

func (s *suite) wantReceivedAs(q engine.Queue, id string, bound, want int) []engine.Received {
	s.t.Helper()
	res := s.receiveAs(q, id, bound, engine.MaxBatch, time.Minute)
	if len(res.Messages) != want {
		s.t.Fatalf("%s (maxBacklog %d) received %d messages, want %d", id, bound, len(res.Messages), want)
	}
	if full := want == 0; res.BacklogFull != full {
		s.t.Fatalf("%s: BacklogFull = %v with %d messages", id, res.BacklogFull, want)
	}
	for _, m := range res.Messages {
		if m.Consumer != engine.TagOf(id) {
			s.t.Fatalf("%s's delivery carries consumer tag %x, want %x", id, m.Consumer, engine.TagOf(id))
		}
	}
	return res.Messages
}

func testConsumerBacklogBound(t *testing.T, s *suite) {
	q := s.queue()
	for i := range 14 {
		s.send(q, fmt.Sprint("m", i))
	}
	s.wantReceivedAs(q, "a", 3, 3)
	s.wantReceivedAs(q, "a", 3, 0)
	// Another consumer, and a receive naming none, are not limited by a's backlog.
	s.wantReceivedAs(q, "b", 5, 5)
	if ms := s.receive(q, 2, time.Minute); len(ms) != 2 || ms[0].Consumer != 0 {
		t.Fatalf("a receive naming no consumer: %d messages, %+v", len(ms), ms)
	}
	// A raised bound gives room at once.
	s.wantReceivedAs(q, "a", 4, 1)
	// A consumer without a bound takes what it asks for.
	s.wantReceivedAs(q, "c", 0, 3)
}

func testConsumerBacklogSettlement(t *testing.T, s *suite) {
	q := s.queue()
	for i := range 10 {
		s.send(q, fmt.Sprint("m", i))
	}
	held := s.wantReceivedAs(q, "a", 4, 4)
	s.wantReceivedAs(q, "a", 4, 0)
	wantNil(t, "ack", s.ack(q, held[0].Delivery)[0])
	s.settled(q, held[0].Delivery, time.Time{})
	held[0] = s.wantReceivedAs(q, "a", 4, 1)[0]
	wantNil(t, "release", s.changeVis(q, held[1].Delivery, 0))
	s.settled(q, held[1].Delivery, time.Time{})
	held[1] = s.wantReceivedAs(q, "a", 4, 1)[0]
	wantNil(t, "dead-letter", s.deadLetter(q, held[2].Delivery, ""))
	s.settled(q, held[2].Delivery, time.Time{})
	held[2] = s.wantReceivedAs(q, "a", 4, 1)[0]
	// Retry after d keeps the message held until d has passed.
	wantNil(t, "retry after 5 min", s.changeVis(q, held[3].Delivery, 5*time.Minute))
	s.settled(q, held[3].Delivery, s.clk.Now().Add(5*time.Minute))
	s.clk.Advance(2 * time.Minute) // the others (1 min) lapse; held[3] does not
	s.wantReceivedAs(q, "a", 4, 3)
	s.wantReceivedAs(q, "a", 4, 0)
}

func testConsumerBacklogLapse(t *testing.T, s *suite) {
	q := s.queue()
	for i := range 10 {
		s.send(q, fmt.Sprint("m", i))
	}
	s.wantReceivedAs(q, "a", 2, 2)
	s.wantReceivedAs(q, "a", 2, 0)
	s.clk.Advance(time.Minute) // the visibility timeout of wantReceivedAs
	s.wantReceivedAs(q, "a", 2, 2)
	s.wantReceivedAs(q, "a", 2, 0)
	wantNil(t, "purge", s.e.Purge(s.ctx, q))
	s.send(q, "after")
	s.wantReceivedAs(q, "a", 2, 1)
}

// Concurrent receives of one consumer, none settling, never take more than its bound between
// them.
func testConsumerBacklogConcurrent(t *testing.T, s *suite) {
	q := s.queue()
	for range 5 {
		s.send(q, "1", "2", "3", "4", "5", "6", "7", "8", "9", "10")
	}
	const bound = 7
	var mu sync.Mutex
	got := 0
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 3, Visibility: time.Minute,
					Consumer: &engine.ConsumerOf{ID: "busy", MaxBacklog: bound}})
				if err != nil {
					t.Errorf("Receive: %v", err)
					return
				}
				mu.Lock()
				got += len(res.Messages)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if got != bound {
		t.Fatalf("48 concurrent receives of one consumer took %d messages, want its bound %d", got, bound)
	}
	s.wantCounts(q, 50-bound, bound, 0)
}

func testConsumersList(t *testing.T, s *suite) {
	q := s.queue()
	for i := range 6 {
		s.send(q, fmt.Sprint("m", i))
	}
	s.wantReceivedAs(q, "c", 3, 3)
	s.clk.Advance(time.Second)
	s.wantReceivedAs(q, "a", 2, 2)
	s.wantReceivedAs(q, "b", 0, 1)
	page, err := s.e.ListConsumers(s.ctx, q, 2, "")
	wantNil(t, "list", err)
	seen := s.clk.Now().UTC()
	if len(page.Consumers) != 2 || page.NextCursor == "" {
		t.Fatalf("first page of 2: %+v", page)
	}
	a, b := page.Consumers[0], page.Consumers[1]
	if a.ID != "a" || a.InFlight != 2 || a.MaxBacklog != 2 || !a.LastSeen.Equal(seen) ||
		b.ID != "b" || b.InFlight != 1 || b.MaxBacklog != 0 {
		t.Fatalf("first page: %+v", page.Consumers)
	}
	page, err = s.e.ListConsumers(s.ctx, q, 2, page.NextCursor)
	wantNil(t, "second page", err)
	if len(page.Consumers) != 1 || page.NextCursor != "" || page.Consumers[0].ID != "c" ||
		page.Consumers[0].InFlight != 3 || !page.Consumers[0].LastSeen.Equal(seen.Add(-time.Second)) {
		t.Fatalf("last page: %+v", page)
	}
	// A full page that ends the list has no cursor.
	page, err = s.e.ListConsumers(s.ctx, q, 3, "")
	wantNil(t, "full last page", err)
	if len(page.Consumers) != 3 || page.NextCursor != "" {
		t.Fatalf("a page of exactly every consumer: %d consumers, cursor %q", len(page.Consumers), page.NextCursor)
	}
	_, err = s.e.ListConsumers(s.ctx, q, 3, "!!not a cursor")
	wantRefusal(t, "a bad cursor", err, engine.ErrBadConsumerCursor)
	// Five minutes on, a consumer not seen since is gone; one seen again is listed.
	s.clk.Advance(engine.ConsumerWindow)
	s.wantReceivedAs(q, "b", 1, 1)
	page, err = s.e.ListConsumers(s.ctx, q, 10, "")
	wantNil(t, "list after the window", err)
	if len(page.Consumers) != 1 || page.Consumers[0].ID != "b" || page.Consumers[0].InFlight != 1 {
		t.Fatalf("after the window: %+v", page)
	}
}
