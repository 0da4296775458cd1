package redisengine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type testJob struct {
	n    int
	runs int32
}

// Every job runs exactly once, in batches of at most maxCombined, with at most laneDepth
// batches of one key in flight and keys independent; concurrent calls do share batches.
func TestLanes(t *testing.T) {
	var ls lanes[*testJob]
	const keys, perKey = 3, 400
	var inFlight [keys]atomic.Int32
	var maxSeen [keys]atomic.Int32
	var batches, shared atomic.Int32
	var wg sync.WaitGroup
	jobs := make([][]*testJob, keys)
	for k := range keys {
		for i := range perKey {
			j := &testJob{n: i}
			jobs[k] = append(jobs[k], j)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ls.do(string(rune('a'+k)), j, func(batch []*testJob) {
					n := inFlight[k].Add(1)
					for {
						m := maxSeen[k].Load()
						if n <= m || maxSeen[k].CompareAndSwap(m, n) {
							break
						}
					}
					if len(batch) == 0 || len(batch) > maxCombined {
						t.Errorf("batch of %d", len(batch))
					}
					batches.Add(1)
					if len(batch) > 1 {
						shared.Add(1)
					}
					time.Sleep(50 * time.Microsecond) // a script call in flight
					for _, b := range batch {
						atomic.AddInt32(&b.runs, 1)
					}
					inFlight[k].Add(-1)
				})
				if atomic.LoadInt32(&j.runs) != 1 {
					t.Errorf("do returned with the job run %d times", atomic.LoadInt32(&j.runs))
				}
			}()
		}
	}
	wg.Wait()
	for k := range keys {
		for _, j := range jobs[k] {
			if j.runs != 1 {
				t.Fatalf("key %d job %d ran %d times", k, j.n, j.runs)
			}
		}
		if m := maxSeen[k].Load(); m > laneDepth {
			t.Fatalf("key %d had %d batches in flight, want at most %d", k, m, laneDepth)
		}
	}
	if shared.Load() == 0 {
		t.Fatalf("%d batches, none shared by concurrent calls", batches.Load())
	}
	ls.mu.Lock()
	left := len(ls.m)
	ls.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d lanes left after every call returned", left)
	}
}

// The combined call runs under the leader's deadline, not its cancellation.
func TestDetached(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Hour)
	ctx, stop := detached(parent)
	defer stop()
	cancel()
	if ctx.Err() != nil {
		t.Fatal("the leader's cancellation reached the combined call")
	}
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) < 59*time.Minute {
		t.Fatalf("deadline %v, %v", dl, ok)
	}
}

type outcomeJob struct{ err error }

// A batch whose run panics releases its lane: the other jobs of the batch return with the
// failed outcome they started with, and later calls of the key run.
func TestLanesRunPanics(t *testing.T) {
	var ls lanes[*outcomeJob]
	started := make(chan struct{})
	unblock := make(chan struct{})
	leader := make(chan any, 1)
	go func() {
		defer func() { leader <- recover() }()
		ls.do("k", &outcomeJob{err: errNotRun}, func([]*outcomeJob) {
			close(started)
			<-unblock
			panic("boom")
		})
	}()
	<-started
	// Fill the lane's second slot, so the next calls queue up behind the panicking batch.
	second, secondStarted := make(chan struct{}), make(chan struct{})
	go ls.do("k", &outcomeJob{err: errNotRun}, func(b []*outcomeJob) {
		close(secondStarted)
		<-second
		for _, j := range b {
			j.err = nil
		}
	})
	<-secondStarted // both slots are taken: the calls below wait in the lane
	waiters := make([]*outcomeJob, 3)
	var wg sync.WaitGroup
	for i := range waiters {
		waiters[i] = &outcomeJob{err: errNotRun}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = recover() }() // the one that leads the waiters' batch panics
			ls.do("k", waiters[i], func(b []*outcomeJob) { panic("boom again") })
		}()
	}
	for {
		ls.mu.Lock()
		n := len(ls.m["k"].waiting)
		ls.mu.Unlock()
		if n == len(waiters) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(unblock)
	if r := <-leader; r != "boom" {
		t.Fatalf("the leader's panic: %v", r)
	}
	// The first waiter now leads the waiters' batch and panics too; the others return failed.
	close(second)
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("callers still waiting after the batch ahead of them panicked")
	}
	for i, w := range waiters {
		if w.err != errNotRun {
			t.Fatalf("waiter %d: outcome %v, want errNotRun", i, w.err)
		}
	}
	after := &outcomeJob{err: errNotRun}
	ls.do("k", after, func(b []*outcomeJob) {
		for _, j := range b {
			j.err = nil
		}
	})
	if after.err != nil {
		t.Fatal("a later call did not run")
	}
}
