package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/pkg/testservers/tcpproxy"
)

// Topics under faults: exactly one copy per binding. Each test runs the topic load
// (topicload_test.go: a standard and a fifo topic, three queues each, one binding filtered)
// through `queues api` replicas, injects its fault in the middle of the fan-out and checks
// per binding: nothing acknowledged missing, nothing stored twice, fifo order per group.

// tBinding is one binding's outcome.
type tBinding struct {
	queue                  string
	fifo, filtered         bool
	expected, copies       int
	missing, dupID, dupSeq int
	fifoViol, extra        int
}

// tFigures is one topic run's outcome.
type tFigures struct {
	PublishedOK, Unknown, UnknownLogged int
	// AckedNotLogged counts publishes answered 200 that the log no longer holds (a failover
	// that lost them): their copies may still have been delivered before.
	AckedNotLogged                        int
	Copies, Missing, Duplicated, FIFOViol int
	Extra                                 int
	Bindings                              []tBinding
	PublishErrors                         map[string]int
}

func (f tFigures) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "publishes answered 200 %d, outcome unknown %d (in the log %d), answered but not in the log %d; copies delivered %d, missing %d, duplicated %d, fifo order violations %d, unexpected %d; publish errors %v",
		f.PublishedOK, f.Unknown, f.UnknownLogged, f.AckedNotLogged, f.Copies, f.Missing, f.Duplicated, f.FIFOViol, f.Extra, f.PublishErrors)
	for _, x := range f.Bindings {
		fmt.Fprintf(&b, "\n    queue %s (fifo %v, filtered %v): expected %d, copies %d, missing %d, duplicated by messageId %d, by sequence %d, fifo order violations %d, unexpected %d",
			x.queue, x.fifo, x.filtered, x.expected, x.copies, x.missing, x.dupID, x.dupSeq, x.fifoViol, x.extra)
	}
	return b.String()
}

// finish stops the publishers, awaits the fan-out's catch-up (every binding's lag 0) and the
// queues' drain (in-flight copies back at their deadline and delivered), stops the consumers
// and checks.
func (tl *topicLoad) finish() tFigures {
	tl.t.Helper()
	tl.stopPub.Store(true)
	tl.pubWG.Wait()
	tl.awaitCaughtUp(30 * time.Second)
	tl.await("every bound queue drained", 90*time.Second, tl.queuesLeft)
	tl.stopCons.Store(true)
	tl.consWG.Wait()
	return tl.check()
}

func (tl *topicLoad) check() tFigures {
	logs := make([]map[int]bool, len(tl.topics))
	for i, tp := range tl.topics {
		logs[i] = tl.logged(tp)
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	f := tFigures{PublishErrors: tl.pubErrs}
	for i, tp := range tl.topics {
		expected := map[int]bool{} // body number -> half
		for n, half := range tp.acked {
			expected[n] = half
			if !logs[i][n] {
				f.AckedNotLogged++
			}
		}
		for n, half := range tp.unknown {
			if logs[i][n] {
				expected[n] = half
				f.UnknownLogged++
			}
		}
		f.PublishedOK += len(tp.acked)
		f.Unknown += len(tp.unknown)
		for _, q := range tp.queues {
			x := q.figures(tp.fifo, expected)
			f.Bindings = append(f.Bindings, x)
			f.Copies += x.copies
			f.Missing += x.missing
			f.Duplicated += x.dupID + x.dupSeq
			f.FIFOViol += x.fifoViol
			f.Extra += x.extra
		}
	}
	return f
}

// figures compares q's deliveries with the numbers expected in it (topicLoad.mu held).
func (q *tqueue) figures(fifo bool, expected map[int]bool) tBinding {
	x := tBinding{queue: q.id, fifo: fifo, filtered: q.filtered, fifoViol: q.fifoViol}
	for n, half := range expected {
		if q.filtered && !half {
			continue
		}
		x.expected++
		if len(q.ids[n]) == 0 {
			x.missing++
		}
	}
	for n, set := range q.ids {
		x.copies++
		x.dupSeq += len(set) - 1
		if half, ok := expected[n]; !ok || (q.filtered && !half) {
			x.extra++
		}
	}
	for _, k := range q.firsts {
		x.dupID += max(k-1, 0)
	}
	return x
}

// wantTopicsClean fails t unless every binding got each expected message once, in order.
func wantTopicsClean(t *testing.T, f tFigures) {
	t.Helper()
	want(t, "copies missing", f.Missing, 0)
	want(t, "copies duplicated", f.Duplicated, 0)
	want(t, "fifo order violations", f.FIFOViol, 0)
	want(t, "copies delivered that no binding expected", f.Extra, 0)
	if f.PublishedOK == 0 || f.Copies == 0 {
		t.Errorf("nothing published or copied (%d, %d): the load did not run", f.PublishedOK, f.Copies)
	}
}

// topicLoadSize is how many publish calls a round lets the load make before its fault.
func topicLoadSize() int64 { return load() / 2 }

// heldMetricFanout is the gauge of the topics whose fan-out lease a replica holds.
const heldMetricFanout = "queues_fanout_topics_held"

// awaitFanoutHolder answers the index in s.apis of a replica that holds a topic's fan-out
// lease (the most of them), once one does.
func awaitFanoutHolder(t *testing.T, s *stack) int {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s.mu.Lock()
		apis := append([]*proc(nil), s.apis...)
		s.mu.Unlock()
		best, most := -1, 0.0
		for i, p := range apis {
			if n := metric(p, heldMetricFanout); n > most {
				best, most = i, n
			}
		}
		if best >= 0 {
			return best
		}
		if time.Now().After(deadline) {
			t.Fatal("no API replica took a topic's fan-out lease within 60 s")
		}
	}
}

// windowOpen answers the bindings whose queue holds copies past the binding's cursor (its
// high-water mark above its sequence): a holder between its Copy and its AdvanceBindings.
func (tl *topicLoad) windowOpen(rdb redis.UniversalClient) map[string]bool {
	ctx := context.Background()
	open := map[string]bool{}
	for _, tp := range tl.topics {
		tid, _ := ids.ParseUUID(tp.id)
		for _, q := range tp.queues {
			qid, _ := ids.ParseUUID(q.id)
			bd, err1 := rdb.HGet(ctx, rediskeys.TopicBindings(tid), q.binding).Result()
			mark, err2 := rdb.HGet(ctx, rediskeys.TopicCopied(qid), q.binding).Int64()
			var cursor int64
			if _, err := fmt.Sscan(strings.SplitN(bd, "|", 2)[0], &cursor); err1 == nil && err2 == nil && err == nil && mark > cursor {
				open[q.binding] = true
			}
		}
	}
	return open
}

// stillOpen reports whether a binding open now is still open after a pause: a live holder
// advances within it, a held or killed one cannot.
func (tl *topicLoad) stillOpen(rdb redis.UniversalClient) bool {
	first := tl.windowOpen(rdb)
	if len(first) == 0 {
		return false
	}
	time.Sleep(300 * time.Millisecond) // long enough for a live holder to advance
	for b := range tl.windowOpen(rdb) {
		if first[b] {
			return true
		}
	}
	return false
}

// holdInWindow holds the replies of a replica's Redis proxy until the replica is caught
// between a Copy (run by Redis, its reply held) and its AdvanceBindings, trying up to tries
// times (releasing between tries). true: caught, the proxy still holding.
func holdInWindow(tl *topicLoad, rdb redis.UniversalClient, px *tcpproxy.Proxy, tries int) bool {
	for range tries {
		px.Hold()
		held := make(chan struct{})
		go func() { px.WaitHeld(); close(held) }()
		select {
		case <-held:
		case <-time.After(5 * time.Second):
		}
		if tl.stillOpen(rdb) {
			return true
		}
		px.Release()
		time.Sleep(time.Duration(10+tries%7) * time.Millisecond) // let a round begin
	}
	return false
}

// killFanoutHolders kills (-9) the replica holding a topic's fan-out lease, mid fan-out
// (the publishers running), and starts another in its place; kills times, each of the
// holder of the moment (after the first, another replica: the takeover's). A replica behind
// a proxy of its own is first caught between a Copy and its AdvanceBindings (holdInWindow);
// inWindow counts the kills that left a binding's queue ahead of its cursor.
func killFanoutHolders(t *testing.T, s *stack, tl *topicLoad, rdb redis.UniversalClient, kills int) (what []string, inWindow int) {
	for range kills {
		tl.awaitPublishes(topicLoadSize())
		i := awaitFanoutHolder(t, s)
		s.mu.Lock()
		victim := s.apis[i]
		px := s.proxies[victim]
		s.mu.Unlock()
		start := time.Now()
		caught := px != nil && holdInWindow(tl, rdb, px, 100)
		held := time.Since(start) // past the 10 s lease, another replica may have taken the topic
		victim.kill()
		if px != nil {
			px.Cut()
		}
		if caught || tl.stillOpen(rdb) {
			inWindow++
		}
		s.killAndRestart(&s.apis, i, s.startAPI)
		what = append(what, fmt.Sprintf("%s after %v", victim.name, held.Round(100*time.Millisecond)))
	}
	return what, inWindow
}

// TestTopicsKillReplica: three API replicas (they run the fan-out), each reaching Redis
// through a proxy of its own; the replica holding a topic's fan-out lease is caught between
// a Copy and its AdvanceBindings (its proxy holds Redis's replies: the copy is stored, its
// answer and the advance never come), killed with SIGKILL and restarted; then the holder
// that took over is killed too (full form: three rounds of two). The lease ends 10 s after
// the killed holder's last renewal and another replica takes the topic over, reading from
// the binding cursors: what the killed holder copied but did not record is read again and
// must be skipped by the queue's high-water mark. Redis keeps no AOF here (its durability is
// not the question).
func TestTopicsKillReplica(t *testing.T) {
	r := startRedis(t, "--appendonly", "no")
	s := newStackOn(t, []string{"QUEUES_REDIS_URL=redis://" + r.addr()}, 0, 0)
	s.proxied = r.addr()
	for range 3 {
		s.apis = append(s.apis, s.startAPI())
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.addr()})
	defer rdb.Close()
	tl := newTopicLoad(t, s, topicShape{standard: 1, fifo: 1, bindings: 3})
	tl.start()
	killed, hits := killFanoutHolders(t, s, tl, rdb, 2*rounds())
	tl.awaitPublishes(topicLoadSize())
	f := tl.finish()
	t.Logf("topics, kill -9 of the fan-out holder %d times (%s), %d of them between a Copy and its AdvanceBindings: %s", len(killed), strings.Join(killed, ", "), hits, f)
	wantTopicsClean(t, f)
	if hits == 0 {
		t.Error("no kill landed between a Copy and its AdvanceBindings: the crash window was not tried")
	}
}

// TestTopicsRedisRestart (F7-like): Redis (appendfsync always) killed with SIGKILL under the
// topic load and restarted on its AOF; publishes, copies and advances fail meanwhile and are
// retried by the fan-out with backoff.
func TestTopicsRedisRestart(t *testing.T) {
	s := newStack(t, "", 2, 0)
	tl := newTopicLoad(t, s, topicShape{standard: 1, fifo: 1, bindings: 3})
	tl.start()
	for range rounds() {
		tl.awaitPublishes(topicLoadSize())
		awaitFanoutHolder(t, s) // the fan-out is running
		s.redis.kill()
		tl.awaitPublishes(20) // publishes fail while it is down
		s.redis.start()
	}
	tl.awaitPublishes(topicLoadSize())
	f := tl.finish()
	t.Logf("topics, F7 kill -9 of Redis (appendfsync always) %d times: %s", rounds(), f)
	wantTopicsClean(t, f)
}

// awaitReplicated waits until primary's replica has every write primary made so far (its
// acknowledged offset reaches the primary's offset read now).
func awaitReplicated(t *testing.T, primary *redisProc) {
	t.Helper()
	info := func() string { v, _ := primary.do("INFO", "replication"); s, _ := v.(string); return s }
	field := func(s, name string) int64 {
		for _, line := range strings.Split(s, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), name); ok {
				var n int64
				fmt.Sscan(v, &n)
				return n
			}
		}
		return -1
	}
	target := field(info(), "master_repl_offset:")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s := info()
		_, rest, _ := strings.Cut(s, "slave0:")
		_, off, _ := strings.Cut(rest, "offset=")
		var got int64 = -1
		fmt.Sscan(strings.SplitN(off, ",", 2)[0], &got)
		if target >= 0 && got >= target {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the replica did not reach offset %d (%s)", primary, target, s)
		}
	}
}

// TestTopicsFailover (F10-like): a primary with one replica behind a proxy, the API replicas
// answering sends after WAIT 1 (QUEUES_REDIS_SYNC_REPLICAS=1). The consumers pause and the
// replica catches up with their receives and acks (a receive the failover undid would come
// again at receiveCount 1: indistinguishable here from a second copy); then, with the
// publishers and the fan-out still running for a few more publishes, the primary is killed,
// the replica promoted and the proxy pointed at it; the old primary comes back as the new
// one's replica. The writes the failover loses are the last ones: publishes, copies (their
// high-water marks with them) and the cursor advances after them, so a lost copy is copied
// again once, never twice. An acknowledged publish the failover lost is counted apart
// and must be 0 (a publish, like a send, is answered after WAIT 1).
func TestTopicsFailover(t *testing.T) {
	a := startRedis(t, "--appendonly", "no")
	b := startRedis(t, "--appendonly", "no", "--replicaof", "127.0.0.1", itoa(a.port))
	awaitReplica(t, a)
	proxy, err := tcpproxy.Start(a.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	s := newStackOn(t, []string{"QUEUES_REDIS_URL=redis://" + proxy.Addr(), "QUEUES_REDIS_SYNC_REPLICAS=1"}, 2, 0)
	tl := newTopicLoad(t, s, topicShape{standard: 1, fifo: 1, bindings: 3})
	tl.start()
	primary, replica := a, b
	for range rounds() {
		tl.awaitPublishes(topicLoadSize())
		awaitFanoutHolder(t, s)
		tl.pause()
		awaitReplicated(t, primary)
		tl.awaitPublishes(20) // the fan-out goes on: its last writes are the failover's to lose
		primary.kill()
		if _, err := replica.do("REPLICAOF", "NO", "ONE"); err != nil {
			t.Fatal(err)
		}
		proxy.SetTarget(replica.addr())
		proxy.Cut()
		tl.resume()
		_ = os.RemoveAll(filepath.Join(primary.dir, "appendonlydir"))
		primary.args = []string{"--appendonly", "no", "--replicaof", "127.0.0.1", itoa(replica.port)}
		primary.start()
		awaitReplica(t, replica)
		primary, replica = replica, primary
	}
	tl.awaitPublishes(topicLoadSize())
	f := tl.finish()
	t.Logf("topics, F10 failover (SyncReplicas 1) %d times: %s", rounds(), f)
	wantTopicsClean(t, f)
	want(t, "acknowledged publishes the failover lost", f.AckedNotLogged, 0)
}

// assertSlots fails t unless every topic's keys and each of its queues' keys (the high-water
// marks beside the queue's partition 0) are in different Redis Cluster slots: Copy and
// AdvanceBindings are then two scripts on two slots, never one atomic step.
func assertSlots(t *testing.T, addr string, tl *topicLoad) string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()
	slot := func(key string) int64 {
		n, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
		}
		return n
	}
	var out []string
	for _, tp := range tl.topics {
		tid, err := ids.ParseUUID(tp.id)
		if err != nil {
			t.Fatal(err)
		}
		ts := slot(rediskeys.TopicTag(tid))
		qs := make([]string, 0, len(tp.queues))
		for _, q := range tp.queues {
			qid, err := ids.ParseUUID(q.id)
			if err != nil {
				t.Fatal(err)
			}
			n := slot(rediskeys.TopicCopied(qid))
			if n == ts {
				t.Fatalf("topic %s and its queue %s share slot %d", tp.id, q.id, n)
			}
			qs = append(qs, fmt.Sprint(n))
		}
		out = append(out, fmt.Sprintf("topic slot %d, its queues' %s", ts, strings.Join(qs, ", ")))
	}
	return strings.Join(out, "; ")
}

// TestTopicsCluster: the kill round on a 3-master Redis Cluster, each topic in a slot of its
// own and its queues in others (asserted by CLUSTER KEYSLOT of their hash tags): the copy
// and the cursor advance are separate scripts on different nodes, and the holder of the
// fan-out lease is killed between them as it may be.
func TestTopicsCluster(t *testing.T) {
	addrs := testservers.RedisCluster(t)
	urls := make([]string, len(addrs))
	for i, a := range addrs {
		urls[i] = "redis://" + a
	}
	s := newStackOn(t, []string{"QUEUES_REDIS_URL=" + strings.Join(urls, ","), "QUEUES_REDIS_CLUSTER=true"}, 2, 0)
	tl := newTopicLoad(t, s, topicShape{standard: 1, fifo: 1, bindings: 3})
	slots := assertSlots(t, addrs[0], tl)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer rdb.Close()
	tl.start()
	killed, hits := killFanoutHolders(t, s, tl, rdb, 2*rounds())
	tl.awaitPublishes(topicLoadSize())
	f := tl.finish()
	t.Logf("topics on Redis Cluster (%s), kill -9 of the fan-out holder %d times (%s), %d of them between a Copy and its AdvanceBindings: %s",
		slots, len(killed), strings.Join(killed, ", "), hits, f)
	wantTopicsClean(t, f)
}
