package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fault is one fault the soak draws: inject it and heal, and return what was done.
type fault struct {
	name string
	do   func(s *stack, tr *traffic, d *lossyDisk) string
}

// soakFaults is the list the soak draws from: the faults of this suite that a running
// deployment can meet.
var soakFaults = []fault{
	{"F7 kill -9 of Redis, restart", func(s *stack, _ *traffic, _ *lossyDisk) string {
		s.redis.kill()
		s.redis.start()
		return "Redis killed and restarted"
	}},
	{"F8 power cut of Redis's disk", func(s *stack, _ *traffic, d *lossyDisk) string {
		s.redis.kill()
		if d == nil {
			s.redis.start()
			return "no lossy disk here: Redis killed and restarted"
		}
		d.cut()
		s.redis.start()
		return "Redis killed, unsynced writes dropped, restarted"
	}},
	{"F14 Redis stopped 1.5 s", func(s *stack, _ *traffic, _ *lossyDisk) string {
		s.redis.signal(syscall.SIGSTOP)
		time.Sleep(1500 * time.Millisecond) // the fault: a pause past the clients' read timeout
		s.redis.signal(syscall.SIGCONT)
		return "Redis paused 1.5 s"
	}},
	{"F5 pusher stopped past its lease", func(s *stack, tr *traffic, _ *lossyDisk) string {
		stopped := s.pushers[s.pick(s.pushers)]
		stopped.signal(syscall.SIGSTOP)
		awaitOthersHold(tr.t, s.pushers, stopped, float64(tr.pushQueues()))
		stopped.signal(syscall.SIGCONT)
		awaitResumed(tr.t, stopped)
		return stopped.name + " stopped until the others held every subscription"
	}},
	{"F4 kill -9 of a pusher, restart", func(s *stack, _ *traffic, _ *lossyDisk) string {
		i := s.pick(s.pushers)
		old := s.pushers[i].name
		s.killAndRestart(&s.pushers, i, s.startPusher)
		return old + " killed, " + s.pushers[i].name + " started"
	}},
	{"F2 kill -9 of an API replica, restart", func(s *stack, _ *traffic, _ *lossyDisk) string {
		i := s.pick(s.apis)
		old := s.apis[i].name
		s.killAndRestart(&s.apis, i, s.startAPI)
		return old + " killed, " + s.apis[i].name + " started"
	}},
	{"F16 rolling restart", func(s *stack, _ *traffic, _ *lossyDisk) string {
		for i := range len(s.pushers) - s.spared {
			s.replace(&s.pushers, i, s.startPusher)
		}
		for i := range len(s.apis) - s.spared {
			s.replace(&s.apis, i, s.startAPI)
		}
		return "every pusher, then every API replica, replaced (the witnesses excepted)"
	}},
}

func (tr *traffic) pushQueues() int {
	n := 0
	for _, q := range tr.queues {
		if q.push {
			n++
		}
	}
	return n
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// F20: the soak. Three API replicas and three pushers on Redis (appendfsync always, its data
// on a lossy disk where possible), a mixed load — standard and fifo queues pulled with long
// polls, standard and fifo queues pushed — for QUEUES_SOAK_DURATION (make soak: 10 minutes),
// with a fault drawn from soakFaults every QUEUES_SOAK_EVERY (30 s). One API replica and one
// pusher are spared by the faults (witnesses: their memory and goroutines are followed, see
// soakwatch_test.go). A topic feeding two queues (one binding filtered) is published to
// throughout (topicload_test.go). Then the queues drain and the history is checked: no
// acknowledged send lost, nothing delivered after its ack succeeded, fifo order (a push that
// arrived after its deadline excepted, see F5); and per binding, every acknowledged publish
// copied once. Skipped unless QUEUES_SOAK_DURATION is set.
func TestF20Soak(t *testing.T) {
	if os.Getenv("QUEUES_SOAK_DURATION") == "" {
		t.Skip("the soak runs with make soak (QUEUES_SOAK_DURATION)")
	}
	duration := envDuration(t, "QUEUES_SOAK_DURATION", 10*time.Minute)
	every := envDuration(t, "QUEUES_SOAK_EVERY", 30*time.Second)
	var d *lossyDisk
	dir := ""
	if lossyDiskPossible() {
		d = newLossyDisk(t)
		dir = d.dir
	}
	s := newStack(t, dir, 3, 3)
	s.spared = 1
	// Six pushed queues: a fair share of two for each of three pushers, three for each of two.
	tr := newTraffic(t, s, trafficShape{pushStd: 3, pushFIFO: 3, pullStd: 2, pullFIFO: 2, pushDelay: 10 * time.Millisecond})
	tr.wait = 2
	// Topics too: one standard topic feeding two queues (one binding filtered), checked per
	// binding at the end (topicload_test.go).
	tl := newTopicLoad(t, s, topicShape{standard: 1, bindings: 2})
	awaitHeld(t, s.pushers[len(s.pushers)-1], "before the load", func(n float64) bool { return n >= 1 })
	start := time.Now()
	w := newWatch(s, start)
	idleBefore, redisBefore := w.idle()
	w.run(t)
	tr.start()
	tl.start()
	counts := map[string]int{}
	var lines []string
	for next := start.Add(every); next.Add(every).Sub(start) <= duration; next = next.Add(every) {
		time.Sleep(time.Until(next)) // the soak's clock: a fault every QUEUES_SOAK_EVERY
		f := soakFaults[rand.IntN(len(soakFaults))]
		at := time.Now()
		what := f.do(s, tr, d)
		counts[f.name]++
		line := fmt.Sprintf("%6.0fs %-38s %s (%v; %d sends so far)", at.Sub(start).Seconds(), f.name, what,
			time.Since(at).Round(10*time.Millisecond), tr.sends.Load())
		lines = append(lines, line)
		t.Log(line)
	}
	time.Sleep(time.Until(start.Add(duration)))
	drainStart := time.Now()
	f := tr.finish()
	tf := tl.finish()
	drain := time.Since(drainStart)
	w.halt()
	idleAfter, redisAfter := w.awaitQuiet(idleBefore)
	report(t, time.Since(start), drain, counts, lines, f, w.growth(idleBefore, idleAfter, redisBefore, redisAfter))
	t.Logf("F20 soak, topics: %s", tf)
	wantClean(t, f)
	wantTopicsClean(t, tf)
	want(t, "fifo order violations", f.FIFOViolations, f.LatePushes)
}

func lossyDiskPossible() bool {
	if os.Geteuid() != 0 {
		return false
	}
	_, err := os.Stat("/dev/loop-control")
	return err == nil
}

// report prints the soak's figures as one block (docs/durability.md keeps a copy).
func report(t *testing.T, total, drain time.Duration, counts map[string]int, lines []string, f figures, growth string) {
	var b strings.Builder
	fmt.Fprintf(&b, "F20 soak report\n  run %v (drain %v after the last fault's heal and the load's end)\n", total.Round(time.Second), drain.Round(time.Second))
	names := make([]string, 0, len(counts))
	n := 0
	for k, v := range counts {
		names = append(names, k)
		n += v
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "  faults injected: %d\n", n)
	for _, k := range names {
		fmt.Fprintf(&b, "    %-38s %d\n", k, counts[k])
	}
	fmt.Fprintf(&b, "  acknowledged sends %d; sends with an unknown outcome %d (delivered anyway %d)\n", f.SentOK, f.Unknown, f.Recovered)
	fmt.Fprintf(&b, "  lost %d; delivered again after a successful ack %d; fifo order violations %d\n", f.Lost, f.RedeliveredAfterAck, f.FIFOViolations)
	fmt.Fprintf(&b, "  duplicate deliveries %d (at least once); push requests %d, pushed again after a 200 %d, pushed after their deadline %d\n",
		f.Duplicates, f.Pushes, f.PushedAgain, f.LatePushes)
	b.WriteString(growth)
	fmt.Fprintf(&b, "  send errors %v\n  timeline:\n    %s", f.SendErrors, strings.Join(lines, "\n    "))
	t.Log(b.String())
}
