package faults

import (
	"bufio"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// metricSum adds up every sample of a pusher replica's /metrics whose line starts with
// prefix (all the labels of one counter); -1 when it cannot be read.
func metricSum(p *proc, prefix string) float64 {
	resp, err := http.Get(p.metrics)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// settled is what a replica's settlements took effect on, by outcome: messages acknowledged,
// retried, dead-lettered or cancelled (released ones are counted whatever the engine answered).
func settled(p *proc) map[string]float64 {
	n := map[string]float64{}
	for _, o := range []string{"acknowledged", "retried", "dead_lettered", "cancelled"} {
		n[o] = metric(p, `queues_push_messages_total{outcome="`+o+`"}`)
	}
	return n
}

// since is after−before per outcome, and their sum.
func since(before, after map[string]float64) (map[string]float64, float64) {
	d, sum := map[string]float64{}, 0.0
	for k, v := range after {
		if x := v - before[k]; x != 0 {
			d[k] = x
			sum += x
		}
	}
	return d, sum
}

// trap is the endpoint's script for F5 (b): the first push it sees once armed is held (the
// request in progress) until opened; while held, every other push fails (500), so the
// messages of the held push come back — redelivered by the other replica, then retried later
// — while the stale answer is still to come. again closes once every held message was pushed
// again: each then has a newer delivery, so the held one's handles are all stale. Opened,
// every push is answered 200.
type trap struct {
	mu      sync.Mutex
	armed   bool
	opened  bool
	held    []string        // the held push's bodies
	seen    map[string]bool // held bodies pushed again
	caught  chan struct{}   // closed when a push is held
	again   chan struct{}   // closed when every held body was pushed again
	release chan struct{}   // closed by open: the held push answers 200
}

// arm makes the next push the held one; it returns the channels of this arming.
func (tp *trap) arm() (caught, again chan struct{}) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.armed, tp.opened, tp.held, tp.seen = true, false, nil, map[string]bool{}
	tp.caught, tp.again, tp.release = make(chan struct{}), make(chan struct{}), make(chan struct{})
	return tp.caught, tp.again
}

func (tp *trap) hook(bodies []string) int {
	tp.mu.Lock()
	if tp.armed {
		tp.armed, tp.held = false, bodies
		close(tp.caught)
		release := tp.release
		tp.mu.Unlock()
		<-release
		return http.StatusOK
	}
	defer tp.mu.Unlock()
	if tp.opened || tp.held == nil {
		return http.StatusOK
	}
	for _, b := range bodies {
		if slices.Contains(tp.held, b) {
			tp.seen[b] = true
		}
	}
	if len(tp.seen) == len(tp.held) && tp.again != nil {
		close(tp.again)
		tp.again = nil
	}
	return http.StatusInternalServerError
}

// open answers the held push (200) and every push after it; it returns how many it held.
func (tp *trap) open() int {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.opened = true
	close(tp.release)
	return len(tp.held)
}

// holderOf is the pusher replica holding the only subscription, and the other one.
func holderOf(t *testing.T, s *stack) (holder, other *proc) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		for i, p := range s.pushers {
			if metric(p, heldMetric) == 1 {
				return p, s.pushers[1-i]
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no pusher holds the subscription")
		}
	}
}

// batchResults is a replica's push attempts by result, and its released messages.
func batchResults(p *proc) map[string]float64 {
	out := map[string]float64{"released messages": metric(p, releasedMetric)}
	for _, r := range []string{"acknowledged", "deferred", "settled", "throttled", "failed"} {
		out[r] = metric(p, `queues_push_batches_total{result="`+r+`"}`)
	}
	return out
}

// handled is a replica's count of pushes it has finished with: verdicts and give-backs.
func handled(p *proc) float64 {
	return metricSum(p, "queues_push_batches_total") + metric(p, releasedMetric)
}

// F5 (b): a pusher stopped (SIGSTOP) while its push request is in progress, past its lease
// and the messages' deadlines, and resumed once the other replica has pushed those messages
// again (failed: they are back in the queue for a retry). The held request is then answered
// 200 — the stale answer reaches the resumed replica — and the plan's rule must hold: a
// settlement of the superseded delivery is rejected (a newer attempt exists), so nothing the
// resumed replica does removes or moves the message that is back in the queue. One fifo
// pushed queue with maxInFlight 1: exactly one replica holds it, and the held push is the
// only one that replica has out. Checked: the resumed replica's settlements took effect on 0 messages; no acknowledged
// send lost, none left without a 200; fifo order; the held messages were pushed again (the
// duplicates at least once allows).
func TestF5PausedMidPush(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the queues binary: API, two pushers")
	}
	s := newStack(t, "", 1, 2)
	tr := newTraffic(t, s, trafficShape{pushFIFO: 1, maxInFlight: 1})
	tp := &trap{}
	tr.hook = tp.hook
	heldTotal := 0
	for r := range rounds() {
		caught, again := tp.arm()
		if r > 0 {
			tr.stopSend.Store(false)
			tr.stopRecv.Store(false)
		}
		tr.start()
		<-caught
		holder, other := holderOf(t, s)
		settledBefore, handledBefore, resultsBefore := settled(holder), handled(holder), batchResults(holder)
		holder.signal(syscall.SIGSTOP) // mid-request: the endpoint holds it
		awaitHeld(t, other, "taking over", func(n float64) bool { return n == 1 })
		select { // the other replica pushed every held message again (answered 500)
		case <-again:
		case <-time.After(90 * time.Second):
			t.Fatal("the held messages were not all pushed again within 90 s of the pause")
		}
		held := tp.open() // the held request answers 200, to a stopped process
		heldTotal += held
		holder.signal(syscall.SIGCONT)
		// Await the resumed replica's handling of that answer: a verdict, or a give-back.
		for deadline := time.Now().Add(60 * time.Second); handled(holder) <= handledBefore; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not settle nor give back its held push within 60 s of SIGCONT", holder.name)
			}
		}
		byOutcome, stale := since(settledBefore, settled(holder))
		path, _ := since(resultsBefore, batchResults(holder))
		t.Logf("F5 (b) round %d: %s paused mid-push (%d messages held), resumed after %s pushed them again; the held push ended %v; settlements of the stale delivery that took effect: %v %v",
			r+1, holder.name, held, other.name, path, stale, byOutcome)
		want(t, "stale settlements that took effect", int(stale), 0)
		tr.awaitSends(load() / 10)
		f := tr.finish()
		t.Logf("F5 (b) after round %d: %s; send errors %v", r+1, f, f.SendErrors)
		wantClean(t, f)
		if f.PushDuplicates < heldTotal {
			t.Errorf("pushed more than once %d, want at least the %d held (the fault did not happen as planned)", f.PushDuplicates, heldTotal)
		}
	}
}
