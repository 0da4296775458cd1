package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// testFIFOHistory is a randomized history test of fifo queues: concurrent producers (some
// groups owned by one producer, some shared by all, some sends retried with their dedup id)
// and consumers that acknowledge, release, retry after a delay, dead-letter, or crash without
// settling (their batch comes back at its deadline, and a message crashed maxReceiveCount times
// is redriven), while the partitions grow. Time is the fake clock, advanced by 20 ms by
// producers after each send and by 50 ms by consumers that find nothing to do while no other
// consumer holds a batch, so crashed batches come back without sleeping, and a held batch
// (visibility 1 h) is never lost to the clock.
//
// Every call is stamped with a logical clock (tick) before and after it; the checker derives
// only what those stamps prove, so it never reports a false violation:
//
//   - exclusivity: no receive that started after a batch of group G was returned and ended
//     before that batch was certainly over (the start of the settle of its last message, or
//     the clock advance that passed a crashed batch's deadline) returned a message of G;
//   - head and order: a receive returned messages of G in sequence order, and every earlier
//     message of G not in it had been settled for good (acknowledged or dead-lettered) by a
//     call that started before the receive ended (redriven messages excepted: their move
//     happens inside a receive);
//   - acknowledged order: likewise for every successful acknowledgement;
//   - nothing lost, nothing twice: every accepted message is acknowledged exactly once or is in
//     the dead-letter queue exactly once, with its group; the source queue ends empty;
//   - sequence numbers increase in each producer's send order within a group, and a resend
//     with the same dedup id answers the original message id as a duplicate.
func testFIFOHistory(t *testing.T, h Harness) {
	var (
		e   engine.Engine
		clk *clock.Fake
	)
	growth := h.NewWithPartitionRate != nil
	if growth {
		e, clk = h.NewWithPartitionRate(t, 20)
	} else {
		e, clk = h.New(t)
	}
	s := &suite{t: t, e: e, clk: clk, ctx: context.Background()}
	dlq := s.queue(fifo)
	q := s.queue(fifo, withRedrive(dlq, historyMaxReceives))
	hs := newHistory(clk)
	start := clk.Now()

	const (
		producers     = 3
		ownedGroups   = 36
		sharedGroups  = 2
		batchesPerPro = 120
		consumers     = 6
		crashVis      = 2 * time.Second
		holdVis       = time.Hour
		runLimit      = 60 * time.Second // real time: a broken engine fails, it does not hang
	)
	deadline := time.Now().Add(runLimit)
	var producing sync.WaitGroup
	for p := range producers {
		producing.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 7))
			var owned []string
			for g := p; g < ownedGroups; g += producers {
				owned = append(owned, fmt.Sprintf("g%02d", g))
			}
			count := map[string]int{}
			for b := 0; b < batchesPerPro && time.Now().Before(deadline); b++ {
				n := 1 + rng.IntN(engine.MaxBatch)
				msgs := make([]engine.Message, n)
				for i := range msgs {
					g := owned[rng.IntN(len(owned))]
					if rng.IntN(8) == 0 {
						g = fmt.Sprintf("shared%d", rng.IntN(sharedGroups))
					}
					body := fmt.Sprintf("%s/p%d/%d", g, p, count[g])
					count[g]++
					msgs[i] = engine.Message{Body: body, GroupID: g}
					if rng.IntN(4) == 0 {
						msgs[i].DedupID = "d-" + body
					}
				}
				res, err := e.Send(context.Background(), q, msgs)
				if err != nil {
					hs.fail("send: %v", err)
					return
				}
				hs.sent(p, msgs, res)
				// A producer that did not see the answer sends the dedup'd ones again.
				var again []engine.Message
				var want []ids.ID
				for i, m := range msgs {
					if m.DedupID != "" && rng.IntN(2) == 0 {
						again = append(again, engine.Message{Body: m.Body + " (retry)", GroupID: m.GroupID, DedupID: m.DedupID})
						want = append(want, res[i].MessageID)
					}
				}
				if len(again) > 0 {
					res2, err := e.Send(context.Background(), q, again)
					if err != nil {
						hs.fail("resend: %v", err)
						return
					}
					for i, r := range res2 {
						if !r.Duplicate || r.MessageID != want[i] {
							hs.fail("resend of %q: %+v, want a duplicate of %s", again[i].DedupID, r, want[i])
						}
					}
					hs.addDups(len(again))
				}
				hs.advance(20 * time.Millisecond)
			}
		})
	}
	var produced atomic.Bool
	go func() { producing.Wait(); produced.Store(true) }()

	var consuming sync.WaitGroup
	for c := range consumers {
		consuming.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 99))
			for time.Now().Before(deadline) && !hs.failed() {
				if produced.Load() {
					st, err := e.Stats(context.Background(), q)
					if err != nil {
						hs.fail("stats: %v", err)
						return
					}
					if st.Visible+st.InFlight+st.Delayed == 0 {
						return
					}
				}
				crash := rng.IntN(5) == 0
				vis := holdVis
				if crash {
					vis = crashVis
				} else {
					hs.holders.Add(1) // before the receive: idle consumers must not move time now
				}
				t0 := hs.tick()
				res, err := e.Receive(context.Background(), q, engine.ReceiveRequest{Max: 1 + rng.IntN(engine.MaxBatch), Visibility: vis})
				t1 := hs.tick()
				if err != nil {
					hs.fail("receive: %v", err)
					return
				}
				if len(res.Messages) > 0 {
					batches := hs.received(res.Messages, t0, t1, crash)
					if !crash {
						for _, b := range batches {
							hs.settle(e, q, b, rng)
						}
					}
				}
				if !crash {
					hs.holders.Add(-1)
				}
				if len(res.Messages) == 0 {
					// Nothing to do: let time pass (crashed batches' deadlines, retries), but only
					// while no consumer holds a batch, whose hold must outlast the history.
					if hs.holders.Load() == 0 {
						hs.advance(50 * time.Millisecond)
					} else {
						runtime.Gosched()
					}
				}
			}
		})
	}
	consuming.Wait()
	producing.Wait()
	if hs.failed() {
		t.Fatal(hs.failure())
	}
	if time.Now().After(deadline) {
		t.Fatalf("history did not finish within %s", runLimit)
	}
	s.wantCounts(q, 0, 0, 0)
	// Drain the dead-letter queue.
	for {
		ms := s.receive(dlq, engine.MaxBatch, time.Hour)
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			hs.inDLQ(m)
		}
		s.ackAll(dlq, ms)
	}
	st := s.stats(q)
	figures := hs.check(t)
	t.Logf("fifo history: %s; partitions 1 -> %d; fake time %s", figures, st.Partitions, clk.Now().Sub(start).Round(time.Millisecond))
	if growth && st.Partitions < 2 {
		t.Fatalf("partitions did not grow during the history (%d)", st.Partitions)
	}
}

// historyMaxReceives is the history queue's maxReceiveCount.
const historyMaxReceives = 3

// history records what producers and consumers saw.
type history struct {
	clk   *clock.Fake
	ticks atomic.Int64
	// holders counts consumers between their receive and their last settle (crashing ones
	// excepted); consumers only advance the clock while it is 0.
	holders atomic.Int64

	mu       sync.Mutex
	msgs     map[ids.ID]*hmsg
	order    map[string][]ids.ID // producer/group -> ids in send order
	batches  []*hbatch
	advances []hadvance
	dups     int
	err      error
	stats    struct{ deliveries, crashes, acks, releases, retries, deadLettered, staleSettles int }
}

type hmsg struct {
	id       ids.ID
	group    string
	seq      uint64
	seen     bool // seq known (received at least once)
	sent     bool // its send's answer was recorded
	ackStart int64
	ackEnd   int64
	acks     int
	dlStart  int64
	dls      int
	dlq      int    // times found in the dead-letter queue
	dlqGroup string // its group there
	reason   string
}

type hbatch struct {
	group      string
	ids        []ids.ID
	seqs       []uint64
	start, end int64
	crash      bool
	deadline   time.Time
	ends       map[ids.ID]int64 // tick at the start of each message's settle
	deliv      map[ids.ID]engine.Delivery
}

type hadvance struct {
	tick int64     // just before the advance
	now  time.Time // after it
}

func newHistory(clk *clock.Fake) *history {
	return &history{clk: clk, msgs: map[ids.ID]*hmsg{}, order: map[string][]ids.ID{}}
}

func (hs *history) tick() int64 { return hs.ticks.Add(1) }

func (hs *history) fail(format string, args ...any) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.err == nil {
		hs.err = fmt.Errorf(format, args...)
	}
}

func (hs *history) failed() bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.err != nil
}

func (hs *history) failure() error {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.err
}

func (hs *history) advance(d time.Duration) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	tk := hs.tick()
	hs.clk.Advance(d)
	hs.advances = append(hs.advances, hadvance{tk, hs.clk.Now()})
}

func (hs *history) addDups(n int) {
	hs.mu.Lock()
	hs.dups += n
	hs.mu.Unlock()
}

func (hs *history) sent(p int, msgs []engine.Message, res []engine.SendResult) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for i, r := range res {
		if r.Duplicate {
			if hs.err == nil {
				hs.err = fmt.Errorf("first send of %q answered as a duplicate", msgs[i].Body)
			}
			continue
		}
		m := hs.msgs[r.MessageID]
		switch {
		case m == nil: // (a consumer may have received it before this answer was recorded)
			m = &hmsg{id: r.MessageID, group: msgs[i].GroupID}
			hs.msgs[r.MessageID] = m
		case m.sent:
			hs.err = cmp(hs.err, fmt.Errorf("message id %s answered twice", r.MessageID))
		case m.group != msgs[i].GroupID:
			hs.err = cmp(hs.err, fmt.Errorf("message %s sent to group %s was received with group %s", r.MessageID, msgs[i].GroupID, m.group))
		}
		m.sent = true
		k := fmt.Sprintf("p%d/%s", p, msgs[i].GroupID)
		hs.order[k] = append(hs.order[k], r.MessageID)
	}
}

// received records a receive's messages as one batch per group.
func (hs *history) received(ms []engine.Received, t0, t1 int64, crash bool) []*hbatch {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	byGroup := map[string]*hbatch{}
	var out []*hbatch
	for _, m := range ms {
		hs.stats.deliveries++
		hm := hs.msgs[m.MessageID]
		if hm == nil {
			// A send whose answer is not recorded yet cannot be delivered before it was stored,
			// but its record may lag; create it.
			hm = &hmsg{id: m.MessageID, group: m.GroupID}
			hs.msgs[m.MessageID] = hm
		}
		if hm.group != m.GroupID {
			hs.err = cmp(hs.err, fmt.Errorf("message %s of group %s received with group %s", m.MessageID, hm.group, m.GroupID))
		}
		if hm.seen && hm.seq != m.SequenceNumber {
			hs.err = cmp(hs.err, fmt.Errorf("message %s: sequence number %d, earlier %d", m.MessageID, m.SequenceNumber, hm.seq))
		}
		if m.ReceiveCount < 1 || m.ReceiveCount > historyMaxReceives {
			hs.err = cmp(hs.err, fmt.Errorf("message %s delivered with receiveCount %d (maxReceiveCount %d)", m.MessageID, m.ReceiveCount, historyMaxReceives))
		}
		hm.seq, hm.seen = m.SequenceNumber, true
		b := byGroup[m.GroupID]
		if b == nil {
			b = &hbatch{group: m.GroupID, start: t0, end: t1, crash: crash, deadline: m.VisibilityDeadline,
				ends: map[ids.ID]int64{}, deliv: map[ids.ID]engine.Delivery{}}
			byGroup[m.GroupID] = b
			out = append(out, b)
			hs.batches = append(hs.batches, b)
		}
		b.ids = append(b.ids, m.MessageID)
		b.deliv[m.MessageID] = m.Delivery
		b.seqs = append(b.seqs, m.SequenceNumber)
	}
	if crash {
		hs.stats.crashes++
	}
	return out
}

// settle settles a batch in order: a run of acknowledgements, then maybe a dead-letter, a
// release of the rest, or a retry after a delay of the rest.
func (hs *history) settle(e engine.Engine, q engine.Queue, b *hbatch, rng *rand.Rand) {
	ctx := context.Background()
	rest := b.ids
	for len(rest) > 0 {
		switch r := rng.IntN(100); {
		case r < 80: // acknowledge a run
			n := 1 + rng.IntN(len(rest))
			hs.call(b, rest[:n], "ack", func(ds []engine.Delivery) ([]error, error) { return e.Ack(ctx, q, ds) })
			rest = rest[n:]
		case r < 85:
			hs.call(b, rest[:1], "dead-letter", func(ds []engine.Delivery) ([]error, error) {
				return e.DeadLetter(ctx, q, []engine.DeadLetterRequest{{Delivery: ds[0], Reason: "history"}})
			})
			rest = rest[1:]
		case r < 93:
			hs.call(b, rest, "release", func(ds []engine.Delivery) ([]error, error) {
				cs := make([]engine.VisibilityChange, len(ds))
				for i, d := range ds {
					cs[i] = engine.VisibilityChange{Delivery: d}
				}
				return e.ChangeVisibility(ctx, q, cs)
			})
			rest = nil
		default:
			hs.call(b, rest, "retry", func(ds []engine.Delivery) ([]error, error) {
				cs := make([]engine.VisibilityChange, len(ds))
				for i, d := range ds {
					cs[i] = engine.VisibilityChange{Delivery: d, Visibility: time.Second}
				}
				return e.ChangeVisibility(ctx, q, cs)
			})
			rest = nil
		}
	}
}

// call runs one settle call for some of a batch's messages and records it.
func (hs *history) call(b *hbatch, idx []ids.ID, op string, fn func([]engine.Delivery) ([]error, error)) {
	hs.mu.Lock()
	ds := make([]engine.Delivery, len(idx))
	for i, id := range idx {
		ds[i] = b.deliv[id]
	}
	hs.mu.Unlock()
	t0 := hs.tick()
	errs, err := fn(ds)
	t1 := hs.tick()
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if err != nil {
		hs.err = cmp(hs.err, fmt.Errorf("%s: %v", op, err))
		return
	}
	for i, id := range idx {
		b.ends[id] = t0
		if errs[i] != nil {
			// Nothing but a crash (not settled at all) lets another receive take a batch.
			hs.stats.staleSettles++
			hs.err = cmp(hs.err, fmt.Errorf("%s of message %s (group %s) of a batch held for %s: %v", op, id, b.group, time.Hour, errs[i]))
			continue
		}
		m := hs.msgs[id]
		switch op {
		case "ack":
			m.acks++
			m.ackStart, m.ackEnd = t0, t1
			hs.stats.acks++
		case "dead-letter":
			m.dls++
			m.dlStart = t0
			hs.stats.deadLettered++
		case "release":
			hs.stats.releases++
		case "retry":
			hs.stats.retries++
		}
	}
}

func (hs *history) inDLQ(m engine.Received) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hm := hs.msgs[m.MessageID]
	if hm == nil {
		hs.err = cmp(hs.err, fmt.Errorf("unknown message %s in the dead-letter queue", m.MessageID))
		return
	}
	hm.dlq++
	hm.dlqGroup = m.GroupID
	if m.DeadLetter != nil {
		hm.reason = m.DeadLetter.Reason
	}
}

func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// check runs the checker over the recorded history and returns the figures.
func (hs *history) check(t *testing.T) string {
	t.Helper()
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var errs []error
	bad := func(format string, args ...any) {
		if len(errs) < 20 {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	// Nothing lost, nothing twice.
	redriven := map[ids.ID]bool{}
	for id, m := range hs.msgs {
		switch {
		case !m.sent:
			bad("message %s (group %s) was received but no send answered its id", id, m.group)
		case m.acks == 1 && m.dlq == 0 && m.dls == 0:
		case m.acks == 0 && m.dlq == 1 && m.dls == 1 && m.reason == "history":
		case m.acks == 0 && m.dlq == 1 && m.dls == 0 && m.reason == engine.RedriveReason:
			redriven[id] = true
		default:
			bad("message %s (group %s): acknowledged %d, dead-lettered %d, in the dead-letter queue %d (reason %q)",
				id, m.group, m.acks, m.dls, m.dlq, m.reason)
		}
		if m.dlq > 0 && m.dlqGroup != m.group {
			bad("message %s of group %s is in the dead-letter queue with group %q", id, m.group, m.dlqGroup)
		}
		if !m.seen {
			bad("message %s (group %s) was never received", id, m.group)
		}
	}
	// Sequence numbers: unique, and increasing in each producer's send order within a group.
	seqs := map[uint64]ids.ID{}
	for id, m := range hs.msgs {
		if other, dup := seqs[m.seq]; dup && m.seen {
			bad("messages %s and %s share sequence number %d", id, other, m.seq)
		}
		seqs[m.seq] = id
	}
	for k, order := range hs.order {
		for i := 1; i < len(order); i++ {
			if a, b := hs.msgs[order[i-1]], hs.msgs[order[i]]; a.seq >= b.seq {
				bad("%s: sequence numbers %d then %d in send order", k, a.seq, b.seq)
			}
		}
	}
	// Per group: messages by sequence number, batches by start.
	groups := map[string][]*hmsg{}
	for _, m := range hs.msgs {
		groups[m.group] = append(groups[m.group], m)
	}
	for _, ms := range groups {
		sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	}
	final := func(m *hmsg) (int64, bool) { // the start of its final settle; false: redriven
		switch {
		case redriven[m.id]:
			return 0, false
		case m.acks > 0:
			return m.ackStart, true
		default:
			return m.dlStart, true
		}
	}
	crossing := func(d time.Time) int64 { // tick of the advance that passed d
		i := sort.Search(len(hs.advances), func(i int) bool { return !hs.advances[i].now.Before(d) })
		if i == len(hs.advances) {
			return 1 << 62
		}
		return hs.advances[i].tick
	}
	byGroup := map[string][]*hbatch{}
	for _, b := range hs.batches {
		byGroup[b.group] = append(byGroup[b.group], b)
	}
	for g, bs := range byGroup {
		held := make([]int64, len(bs))
		for i, b := range bs {
			if b.crash {
				held[i] = crossing(b.deadline)
			} else {
				for _, tk := range b.ends {
					held[i] = max(held[i], tk)
				}
			}
			if !slices.IsSorted(b.seqs) || len(slices.Compact(slices.Clone(b.seqs))) != len(b.seqs) {
				bad("group %s: a receive returned sequence numbers %v", g, b.seqs)
			}
		}
		// Exclusivity.
		for i, b := range bs {
			for j, r := range bs {
				if i != j && r.start > b.end && r.end < held[i] {
					bad("group %s: a receive (ticks %d-%d) returned %d message(s) while a batch of %d received at tick %d was in flight until tick %d or later",
						g, r.start, r.end, len(r.ids), len(b.ids), b.end, held[i])
				}
			}
		}
		// Head and order of receives.
		for _, r := range bs {
			in := map[ids.ID]bool{}
			for _, id := range r.ids {
				in[id] = true
			}
			last := r.seqs[len(r.seqs)-1]
			for _, m := range groups[g] {
				if m.seq >= last {
					break
				}
				if in[m.id] {
					continue
				}
				if at, ok := final(m); ok && (at == 0 || at > r.end) {
					bad("group %s: a receive (ticks %d-%d) returned sequence numbers %v while message %d was not settled (settle started at tick %d)",
						g, r.start, r.end, r.seqs, m.seq, at)
				}
			}
		}
	}
	// Acknowledged order.
	for g, ms := range groups {
		for i, m := range ms {
			if m.acks == 0 {
				continue
			}
			for _, prev := range ms[:i] {
				if at, ok := final(prev); ok && (at == 0 || at > m.ackEnd) {
					bad("group %s: message %d acknowledged (ticks %d-%d) before message %d was settled (tick %d)",
						g, m.seq, m.ackStart, m.ackEnd, prev.seq, at)
				}
			}
		}
	}
	if len(errs) > 0 {
		t.Fatalf("the history breaks fifo semantics:\n%v", errors.Join(errs...))
	}
	st := hs.stats
	return fmt.Sprintf("%d groups, %d messages (%d resends answered as duplicates), %d deliveries in %d group batches, "+
		"%d crashed receives, %d acknowledged, %d released, %d retried after 1 s, %d dead-lettered by consumers, %d redriven",
		len(groups), len(hs.msgs), hs.dups, st.deliveries, len(hs.batches), st.crashes, st.acks, st.releases, st.retries,
		st.deadLettered, len(redriven))
}
