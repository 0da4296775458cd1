package api

import (
	"sync"
	"testing"
	"testing/synctest"
)

// TestStreamTakeWaitsForWholeReceive: while one receive of a stream is out, the other
// fetchers take credit only a whole receive's worth at a time; a trickle of credit waits for
// that receive to end and then goes out as one.
func TestStreamTakeWaitsForWholeReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &stream{max: 10, credit: 10}
		st.cond = sync.NewCond(&st.mu)
		first := st.take()
		if first != 10 {
			t.Fatalf("the first take got %d of 10", first)
		}
		got := make(chan int, 1)
		go func() { got <- st.take() }()
		for range 3 { // credit frames of one message each, as handlers finish
			st.mu.Lock()
			st.credit++
			st.mu.Unlock()
			st.cond.Broadcast()
		}
		synctest.Wait()
		select {
		case n := <-got:
			t.Fatalf("took %d while a receive was out", n)
		default:
		}
		st.give(first, first) // that receive delivered all it took
		if n := <-got; n != 3 {
			t.Fatalf("after the receive ended the take got %d, want 3", n)
		}
		st.mu.Lock()
		st.credit = 25
		st.mu.Unlock()
		if n := st.take(); n != 10 { // a whole receive's worth goes out beside another
			t.Fatalf("with 25 credit and a receive out the take got %d", n)
		}
		st.stop()
	})
}
