package pusher

import (
	"context"
	"sync"
)

// flow is a subscription's flow control (docs/push.md): the batches it may have in flight start at
// maxInFlight, halve (to no less than 1) on each throttle (429, 503 or timeout) and grow by one
// per successful batch back to maxInFlight (additive increase, multiplicative decrease).
type flow struct {
	mu       sync.Mutex
	limit    int
	max      int
	inFlight int
	changed  chan struct{} // closed and replaced whenever a slot may have opened
}

func newFlow(n int) *flow {
	n = max(n, 1)
	return &flow{limit: n, max: n, changed: make(chan struct{})}
}

func (f *flow) wake() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// admit waits until the window admits another batch in flight.
func (f *flow) admit(ctx context.Context) error {
	for {
		f.mu.Lock()
		if f.inFlight < f.limit {
			f.inFlight++
			f.mu.Unlock()
			return nil
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// tryAcquire takes a free slot if there is one.
func (f *flow) tryAcquire() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inFlight < f.limit {
		f.inFlight++
		return true
	}
	return false
}

// full reports whether every slot is taken.
func (f *flow) full() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFlight >= f.limit
}

// done ends an admitted batch and adjusts the limit: flowNone (the slot was not used for a push) and
// flowFailure (a failure that is not a throttle) leave it as it is.
func (f *flow) done(result flowResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inFlight--
	switch result {
	case flowSuccess:
		f.limit = min(f.limit+1, f.max)
	case flowThrottle:
		f.limit = max(f.limit/2, 1)
	}
	f.wake()
}

// setMax applies a changed maxInFlight.
func (f *flow) setMax(n int) {
	n = max(n, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if n > f.max && f.limit == f.max {
		f.limit = n
	}
	f.max = n
	f.limit = min(f.limit, n)
	f.wake()
}

// state returns the current limit and batches in flight.
func (f *flow) state() (limit, inFlight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limit, f.inFlight
}

// maxSettling bounds a subscription's answered pushes whose settlement is still being written
// after their slots were released (the most maxInFlight allows).
const maxSettling = 100

type flowResult int

const (
	flowNone flowResult = iota
	flowSuccess
	flowThrottle
	flowFailure
)

// after returns the limit the flow will have once a batch is done with result (health shows it).
func (f *flow) after(result flowResult) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch result {
	case flowSuccess:
		return min(f.limit+1, f.max)
	case flowThrottle:
		return max(f.limit/2, 1)
	}
	return f.limit
}
