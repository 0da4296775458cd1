package enginetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// testBarrierHistory is a randomized history test of barrier messages: concurrent producers
// send batches of ordinary messages with barriers interleaved (alone or inside a batch), and
// concurrent consumers acknowledge, release (visibility 0) or crash (settle nothing: the
// message comes back when the clock passes its deadline), while the partitions may grow
// between barriers. Every call is stamped with a logical clock before and after it, and the
// checker derives only what those stamps prove:
//
//   - a message m accepted before barrier B (m's send answered before B's send began, or
//     before B in the same batch) was acknowledged by a call that began before every
//     receive of B ended;
//   - B was acknowledged by a call that began before every receive of a message accepted
//     after it (its send began after B's send was answered, or after B in the same batch)
//     ended;
//   - nothing lost: every accepted message is acknowledged once, and the queue ends empty.
func testBarrierHistory(t *testing.T, h Harness) {
	var (
		e   engine.Engine
		clk *clock.Fake
	)
	if h.NewWithPartitionRate != nil {
		e, clk = h.NewWithPartitionRate(t, 10)
	} else {
		e, clk = h.New(t)
	}
	s := &suite{t: t, e: e, clk: clk, ctx: context.Background()}
	q := s.queue()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	bh := &bhistory{msgs: map[ids.ID]*bmsg{}}
	const producers, consumers, sends = 3, 4, 25
	var wg sync.WaitGroup
	var producing atomic.Int32
	producing.Store(producers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer producing.Add(-1)
			r := rand.New(rand.NewPCG(seed, uint64(p)))
			for i := range sends {
				bh.produce(s, q, r, fmt.Sprintf("p%d-%d", p, i))
				clk.Advance(10 * time.Millisecond)
			}
		}()
	}
	var idle atomic.Int64
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(100+c)))
			var held []engine.Received // received, settled after the next receive
			for !bh.failed() {
				if producing.Load() == 0 && bh.allAcked() {
					return
				}
				if bh.consume(s, q, r, &held) {
					idle.Store(0)
					continue
				}
				if bh.busy.Load() > 0 || bh.receiving.Load() > 0 {
					// A call is under way: an engine may have changed its index and still be
					// waiting for its commit (a receive finding nothing then is not a stall:
					// the last acknowledgement answers only after its fsync), and a receive
					// may be running the barrier step, whose lease is on this clock: idle
					// consumers racing the clock ahead would end a slow step's lease while
					// it runs and let a second step release its messages again.
					runtime.Gosched()
					continue
				}
				// Nothing to do: let crashed deliveries come back (their visibility is 2 s).
				clk.Advance(500 * time.Millisecond)
				// Idleness counts once the producers are done: on a loaded machine they may not
				// have run yet, and consumers finding nothing then is no stall.
				if producing.Load() == 0 && idle.Add(1) > 5000 {
					bh.fail("no progress: %d of %d messages acknowledged", bh.acked(), bh.total())
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	if err := bh.failure(); err != nil {
		t.Fatal(err)
	}
	bh.check(t)
	s.wantCounts(q, 0, 0, 0)
}

type bmsg struct {
	barrier            bool
	pos                int // position in its batch
	acks               []int64
	recvs              [][2]int64 // [start, end] of each receive that returned it
	sendStart, sendEnd int64
}

type bhistory struct {
	ticks atomic.Int64
	busy  atomic.Int32 // sends and settles under way
	// receiving counts receives under way (each may run the barrier step).
	receiving atomic.Int32
	mu        sync.Mutex
	msgs      map[ids.ID]*bmsg
	err       error
	nack      int
}

func (bh *bhistory) tick() int64 { return bh.ticks.Add(1) }

func (bh *bhistory) fail(format string, args ...any) {
	bh.mu.Lock()
	defer bh.mu.Unlock()
	if bh.err == nil {
		bh.err = fmt.Errorf(format, args...)
	}
}

func (bh *bhistory) failed() bool { return bh.failure() != nil }

func (bh *bhistory) failure() error {
	bh.mu.Lock()
	defer bh.mu.Unlock()
	return bh.err
}

func (bh *bhistory) total() int {
	bh.mu.Lock()
	defer bh.mu.Unlock()
	return len(bh.msgs)
}

func (bh *bhistory) acked() int {
	bh.mu.Lock()
	defer bh.mu.Unlock()
	return bh.nack
}

func (bh *bhistory) allAcked() bool {
	bh.mu.Lock()
	defer bh.mu.Unlock()
	return bh.nack == len(bh.msgs)
}

// produce sends one batch of 1 to 3 messages; about one batch in six holds a barrier.
func (bh *bhistory) produce(s *suite, q engine.Queue, r *rand.Rand, name string) {
	n := 1 + r.IntN(3)
	msgs := make([]engine.Message, n)
	bar := -1
	if r.IntN(6) == 0 {
		bar = r.IntN(n)
	}
	for i := range msgs {
		msgs[i] = engine.Message{Body: fmt.Sprintf("%s-%d", name, i), Barrier: i == bar}
	}
	bh.busy.Add(1)
	defer bh.busy.Add(-1)
	start := bh.tick()
	res, err := s.e.Send(s.ctx, q, msgs)
	end := bh.tick()
	if err != nil {
		bh.fail("send %s: %v", name, err)
		return
	}
	bh.mu.Lock()
	defer bh.mu.Unlock()
	for i, rs := range res {
		if rs.Err != nil {
			bh.err = fmt.Errorf("send %s[%d]: %v", name, i, rs.Err)
			return
		}
		bh.msgs[rs.MessageID] = &bmsg{barrier: msgs[i].Barrier, pos: i, sendStart: start, sendEnd: end}
	}
}

// consume receives a batch, then settles the batch received before (so a consumer holds
// messages while others receive): acknowledge, release or crash each. It reports whether it
// received or settled anything.
func (bh *bhistory) consume(s *suite, q engine.Queue, r *rand.Rand, held *[]engine.Received) bool {
	start := bh.tick()
	bh.receiving.Add(1)
	res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 1 + r.IntN(4), Visibility: 2 * time.Second})
	bh.receiving.Add(-1)
	end := bh.tick()
	if err != nil {
		bh.fail("receive: %v", err)
		return false
	}
	bh.mu.Lock()
	for _, m := range res.Messages {
		hm := bh.msgs[m.MessageID]
		if hm == nil {
			// Its send has not been recorded yet (the send's answer is on its way): wait.
			bh.mu.Unlock()
			for !bh.known(m.MessageID) && !bh.failed() {
				runtime.Gosched()
			}
			bh.mu.Lock()
			hm = bh.msgs[m.MessageID]
			if hm == nil {
				bh.mu.Unlock()
				return false
			}
		}
		hm.recvs = append(hm.recvs, [2]int64{start, end})
	}
	bh.mu.Unlock()
	prev := *held
	*held = res.Messages
	if len(prev) > 0 {
		bh.busy.Add(1)
		defer bh.busy.Add(-1)
	}
	for _, m := range prev {
		switch x := r.IntN(10); {
		case x < 6:
			as := bh.tick()
			errs, err := s.e.Ack(s.ctx, q, []engine.Delivery{m.Delivery})
			if err != nil {
				bh.fail("ack: %v", err)
				return true
			}
			if errs[0] == nil {
				bh.mu.Lock()
				hm := bh.msgs[m.MessageID]
				hm.acks = append(hm.acks, as)
				bh.nack++
				bh.mu.Unlock()
			}
		case x < 8:
			if _, err := s.e.ChangeVisibility(s.ctx, q, []engine.VisibilityChange{{Delivery: m.Delivery}}); err != nil {
				bh.fail("release: %v", err)
				return true
			}
		default: // crash: comes back at its deadline
		}
	}
	return len(res.Messages) > 0 || len(prev) > 0
}

func (bh *bhistory) known(id ids.ID) bool {
	bh.mu.Lock()
	defer bh.mu.Unlock()
	return bh.msgs[id] != nil
}

// before reports whether a was certainly accepted before b.
func before(a, b *bmsg) bool {
	if a.sendStart == b.sendStart && a.sendEnd == b.sendEnd {
		return a.pos < b.pos // same batch
	}
	return a.sendEnd < b.sendStart
}

func (bh *bhistory) check(t *testing.T) {
	bh.mu.Lock()
	defer bh.mu.Unlock()
	barriers := 0
	for id, m := range bh.msgs {
		if len(m.acks) != 1 {
			t.Errorf("message %s acknowledged %d times, want 1", id, len(m.acks))
		}
		if m.barrier {
			barriers++
		}
	}
	if barriers == 0 {
		t.Logf("no barrier was sent (seed): the rules were not exercised")
	}
	checked, after := 0, 0
	for bid, b := range bh.msgs {
		if !b.barrier || len(b.acks) == 0 {
			continue
		}
		for mid, m := range bh.msgs {
			if mid == bid || len(m.acks) == 0 {
				continue
			}
			if before(m, b) {
				for _, rv := range b.recvs {
					checked++
					if rv[1] < m.acks[0] {
						t.Errorf("barrier %s was delivered (receive ended at %d) before %s, accepted before it, left (ack began at %d)",
							bid, rv[1], mid, m.acks[0])
					}
				}
			}
			if before(b, m) {
				after++
				for _, rv := range m.recvs {
					checked++
					if rv[1] < b.acks[0] {
						t.Errorf("%s, accepted after barrier %s, was delivered (receive ended at %d) before the barrier left (ack began at %d)",
							mid, bid, rv[1], b.acks[0])
					}
				}
			}
		}
	}
	t.Logf("after %d", after)
	t.Logf("%d messages, %d barriers, %d acknowledgements, %d ordering facts checked", len(bh.msgs), barriers, bh.nack, checked)
}
