package redisengine

import (
	"context"
	"sync"

	"github.com/queueshq/queues/pkg/engine"
)

// maxCombined bounds how many calls one combined script call carries (each at most
// engine.MaxBatch messages), so a script stays short however busy a partition is.
const maxCombined = 16

// lanes folds concurrent calls with the same key (one operation on one queue partition) into
// shared script calls: while laneDepth calls of a key are in flight, the calls that arrive
// for it wait, and when one ends the first of them runs them all as one batch (group
// commit). A busy partition thus pays Redis's per-script and per-request costs once per
// batch rather than once per API request, and an idle one adds no wait: a call that finds a
// free slot runs at once.
type lanes[J any] struct {
	mu sync.Mutex
	m  map[string]*lane[J]
}

type lane[J any] struct {
	running int // batches in flight (at most laneDepth)
	waiting []*ticket[J]
}

// laneDepth is how many batches of one lane may be in flight at once: two, so the next batch
// is on its way while one is answered, rather than the partition idling between them.
const laneDepth = 2

type ticket[J any] struct {
	job  J
	done chan struct{}
	lead []*ticket[J] // set when this ticket's goroutine is to run the batch (it is its first)
}

// do runs job with run, alone or in a batch with other jobs of the same key. run gets at
// least one job and records each job's outcome in the job itself (J is a pointer type); do
// returns once this job's outcome is recorded. A job must start out failed (errNotRun), so
// that if run panics, the other jobs of its batch return failed rather than wait forever or
// pass for done; the panic goes on in the goroutine that ran the batch.
func (ls *lanes[J]) do(key string, job J, run func(batch []J)) {
	t := &ticket[J]{job: job}
	ls.mu.Lock()
	if ls.m == nil {
		ls.m = map[string]*lane[J]{}
	}
	var batch []*ticket[J]
	l := ls.m[key]
	if l == nil {
		l = &lane[J]{}
		ls.m[key] = l
	}
	if l.running >= laneDepth {
		t.done = make(chan struct{})
		l.waiting = append(l.waiting, t)
		ls.mu.Unlock()
		<-t.done
		if t.lead == nil {
			return // another goroutine ran it
		}
		batch = t.lead
	} else {
		l.running++
		ls.mu.Unlock()
		batch = []*ticket[J]{t}
	}
	jobs := make([]J, len(batch))
	for i, b := range batch {
		jobs[i] = b.job
	}
	defer ls.release(key, l, batch) // also when run panics
	run(jobs)
}

// release ends a batch: its other jobs' callers return, and the lane's waiters, if any, go
// on as the next batch, led by the first of them.
func (ls *lanes[J]) release(key string, l *lane[J], batch []*ticket[J]) {
	ls.mu.Lock()
	next := l.waiting
	if len(next) > maxCombined {
		next, l.waiting = next[:maxCombined:maxCombined], next[maxCombined:]
	} else {
		l.waiting = nil
	}
	if len(next) == 0 {
		// This batch's slot frees up.
		if l.running--; l.running == 0 {
			delete(ls.m, key)
		}
	}
	ls.mu.Unlock()
	for _, b := range batch[1:] {
		close(b.done)
	}
	if len(next) > 0 {
		next[0].lead = next // the lane stays busy: its first waiter runs the next batch
		close(next[0].done)
	}
}

// errNotRun is every lane job's outcome until its batch ran.
var errNotRun = &engine.Failure{Err: engine.ErrFault, Op: "the shared storage call did not complete"}

// detached is the context a combined call runs under: the leading request's deadline, but
// not its cancellation, since the call also carries other requests.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	c := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(c, dl)
	}
	return context.WithCancel(c)
}
