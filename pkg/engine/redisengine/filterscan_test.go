package redisengine_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/testservers"
)

// scanCap is the byte bound the tests hold the engine to (filter.MaxScanBytes, written out so
// that raising the constant fails them).
const scanCap = 4 << 20

// readCalls sums the calls of the commands that read stored messages (HGET, LRANGE), from
// INFO commandstats (which counts the calls scripts make too).
func readCalls(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_hget" && name != "cmdstat_lrange") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		c, _ := strconv.ParseInt(calls, 10, 64)
		n += c
	}
	return n
}

// TestFilteredReceiveScanBytes: a filtered receive over a queue of big messages that do not
// match reads at most filter.MaxScanBytes of them (and one more) per call, whether they wait
// in the never-received list or in the visible set; before the byte budget it read every
// candidate up to filter.MaxCandidates (here 60 messages of 200 KiB: 12 MiB per call).
func TestFilteredReceiveScanBytes(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	clk := enginetest.NewClock()
	e := newEngine(t, rdb, clk, redisengine.Options{})
	ctx := context.Background()
	const n, size = 60, 200 << 10
	body := strings.Repeat("x", size)
	delay := time.Second
	for _, kind := range []string{"list", "delayed", "fifo"} {
		q := newQueue()
		if kind == "fifo" {
			q.Type = engine.FIFO
		}
		for i := range n {
			m := engine.Message{Body: body, Attributes: map[string]string{"color": "red"}}
			switch kind {
			case "delayed":
				m.Delay = &delay // lands in the visible set, not the list
			case "fifo":
				m.GroupID = "g" + strconv.Itoa(i) // each group's head is a candidate
			}
			must(e.Send(ctx, q, []engine.Message{m}))
		}
		delayed := kind
		clk.Advance(2 * delay)
		f := &filter.Filter{Attributes: map[string][]string{"color": {"blue"}}}
		before, calls := e.ScanBytes(), readCalls(t, rdb)
		res := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute, Filter: f}))
		read, reads := e.ScanBytes()-before, readCalls(t, rdb)-calls
		t.Logf("%s: one filtered receive read %d bytes in %d HGET/LRANGE calls", delayed, read, reads)
		if len(res.Messages) != 0 {
			t.Fatalf("%s: received %d, want 0", delayed, len(res.Messages))
		}
		if read == 0 || read > scanCap+size+64 {
			t.Fatalf("%s: one filtered receive read %d bytes, want 1..%d", delayed, read, scanCap+size+64)
		}
		if max := int64(scanCap/size + 2); reads > max {
			t.Fatalf("%s: %d message reads, want at most %d", delayed, reads, max)
		}
	}
}

// TestBrowsePageByteCap: a browse page holds at most filter.MaxScanBytes of messages (and the
// one that crossed it), in the never-received list and in the visible set
// alike, and paging on still lists every message once. Before the cap one page of 60
// messages of 200 KiB read and answered all 12 MiB.
func TestBrowsePageByteCap(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	clk := enginetest.NewClock()
	e := newEngine(t, rdb, clk, redisengine.Options{})
	ctx := context.Background()
	const n, size = 60, 200 << 10
	body := strings.Repeat("x", size)
	delay := time.Second
	for _, delayed := range []bool{false, true} {
		q := newQueue()
		for range n {
			m := engine.Message{Body: body}
			if delayed {
				m.Delay = &delay
			}
			must(e.Send(ctx, q, []engine.Message{m}))
		}
		clk.Advance(2 * delay)
		seen := map[string]bool{}
		cursor, pages := "", 0
		for {
			page := must(e.Browse(ctx, q, engine.BrowseRequest{State: engine.StateVisible, Limit: 1000, Cursor: cursor}))
			pages++
			bytes := 0
			for _, m := range page.Messages {
				bytes += len(m.Body)
				if seen[m.MessageID.String()] {
					t.Fatalf("delayed=%v: %s listed twice", delayed, m.MessageID)
				}
				seen[m.MessageID.String()] = true
			}
			if bytes > scanCap+size {
				t.Fatalf("delayed=%v: a page of %d bytes, want at most %d", delayed, bytes, scanCap+size)
			}
			if cursor = page.NextCursor; cursor == "" || pages > n {
				break
			}
		}
		t.Logf("delayed=%v: %d messages in %d pages", delayed, len(seen), pages)
		if len(seen) != n {
			t.Fatalf("delayed=%v: paged through %d messages, want %d", delayed, len(seen), n)
		}
	}
}

// TestFilteredWake: across replicas (a send on engine A, a receive parked on engine B), 200
// sends that a parked filtered receive cannot want signal it 0 times, and a matching send
// signals it; the digests travel in the pub/sub payload. Before wake filtering each of the
// 200 sends signalled it (and each woken receive scanned the queue again).
func TestFilteredWake(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	clk := enginetest.NewClock()
	a := newEngine(t, redis.NewClient(&redis.Options{Addr: addr}), clk, redisengine.Options{})
	b := newEngine(t, redis.NewClient(&redis.Options{Addr: addr}), clk, redisengine.Options{})
	ctx := context.Background()
	q, fence := newQueue(), newQueue()
	f := &filter.Filter{Attributes: map[string][]string{"tenant": {"t1"}}}
	fch, stop := b.WatchFilter(q.ID, f)
	defer stop()
	gch, gstop := b.Watch(fence.ID)
	defer gstop()
	for i := range 200 {
		must(a.Send(ctx, q, []engine.Message{{Body: "x", Attributes: map[string]string{"tenant": "t" + strconv.Itoa(i+2)}}}))
	}
	must(a.Send(ctx, fence, []engine.Message{{Body: "fence"}})) // after the others on the channel
	select {
	case <-gch:
	case <-time.After(10 * time.Second):
		t.Fatal("the fence's wake-up did not arrive")
	}
	if n := b.FilteredSignals(); n != 0 {
		t.Fatalf("200 sends the filter cannot select signalled it %d times, want 0", n)
	}
	select {
	case <-fch:
		t.Fatal("a non-matching send woke the filtered receive")
	default:
	}
	must(a.Send(ctx, q, []engine.Message{{Body: "x", Attributes: map[string]string{"tenant": "t1"}}}))
	select {
	case <-fch:
	case <-time.After(10 * time.Second):
		t.Fatal("a matching send did not wake the filtered receive")
	}
}
