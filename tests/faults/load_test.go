package faults

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/ids"
)

// The load: producers send unique bodies to a standard queue and, one goroutine per set of
// groups, in order to a fifo queue; consumers receive from both and acknowledge everything.
// An acknowledged send is one the engine answered without error — exactly when the API
// answers 200 with the message in "messages". The history records every outcome; check
// computes, in Jepsen's total-queue terms:
//   - lost: acknowledged sends never delivered (after the final drain);
//   - redelivered after ack: deliveries of a message whose acknowledgement had succeeded;
//   - fifo order violations: a message of a group delivered for the first time after a later
//     message of its group was.
// Sends that failed (outcome unknown) may or may not be delivered; they are reported apart.

const (
	producers  = 4
	consumers  = 4
	fifoGroups = 8
	visibility = 3 * time.Second
)

type history struct {
	mu        sync.Mutex
	sentOK    map[string]time.Time // body -> when its send was answered
	unknown   map[string]bool
	delivered map[string]int
	acked     map[string]bool
	afterAck  int
	fifoLast  map[string]int // group -> highest counter delivered so far
	fifoViol  int
	sendErrs  map[string]int // error text class -> count
	cuts      []time.Time    // when each power cut came (lossy disks), in order
}

func newHistory() *history {
	return &history{sentOK: map[string]time.Time{}, unknown: map[string]bool{}, delivered: map[string]int{},
		acked: map[string]bool{}, fifoLast: map[string]int{}, sendErrs: map[string]int{}}
}

// figures is one run's outcome.
type figures struct {
	SentOK, Unknown, Delivered int
	Lost, RedeliveredAfterAck  int
	FIFOViolations, Recovered  int
	LostFirst, LostLast        time.Time // when the lost sends were answered
	SendErrors                 map[string]int
	// Duplicates counts deliveries beyond each message's first (at least once allows them).
	Duplicates int
	// MaxBeforeCut is, over the lost sends, the longest time from a send's answer to the
	// power cut that lost it (the window a power cut opens); LostPerCut counts them by cut.
	MaxBeforeCut time.Duration
	LostPerCut   []int
	// Pushes counts push requests; PushedAgain, messages pushed again after the endpoint
	// answered 200 for them; LatePushes, pushed messages that arrived after the visibility
	// deadline they carried (see traffic).
	Pushes, PushedAgain, LatePushes int
	LateRequests                    int // push requests with a message past its deadline
	// PushDuplicates counts pushes beyond each pushed message's first; ReceivedBeforeFirstPush,
	// messages whose first push came at a receiveCount above 1 (a pusher had received them
	// before and given them back — or held them to their deadline).
	PushDuplicates, ReceivedBeforeFirstPush int
	// NeverAnswered counts acknowledged sends to pushed queues that no push answered with a
	// 200 reached (pushed, perhaps, but only to fail): lost for the subscriber.
	NeverAnswered int
}

func (f figures) String() string {
	s := fmt.Sprintf("acknowledged sends %d, unknown %d (recovered %d), lost %d, redelivered after ack %d, fifo order violations %d",
		f.SentOK, f.Unknown, f.Recovered, f.Lost, f.RedeliveredAfterAck, f.FIFOViolations)
	s += fmt.Sprintf(", duplicate deliveries %d", f.Duplicates)
	if f.Lost > 0 {
		s += fmt.Sprintf(", lost sends answered within %v (%s to %s)", f.LostLast.Sub(f.LostFirst),
			f.LostFirst.Format("15:04:05.000"), f.LostLast.Format("15:04:05.000"))
	}
	if f.LostPerCut != nil {
		s += fmt.Sprintf(", lost per cut or kill %v, longest from answer to it %v", f.LostPerCut, f.MaxBeforeCut)
	}
	if f.Pushes > 0 {
		s += fmt.Sprintf(", push requests %d, pushed again after a 200 %d, pushed after their deadline %d (in %d requests), pushed more than once %d, first pushed at a receiveCount above 1 %d, never answered 200 %d",
			f.Pushes, f.PushedAgain, f.LatePushes, f.LateRequests, f.PushDuplicates, f.ReceivedBeforeFirstPush, f.NeverAnswered)
	}
	return s
}

// world is one engine (one API replica's worth) and the two queues under load.
type world struct {
	t        *testing.T
	eng      *redisengine.Engine
	std, fq  engine.Queue
	h        *history
	stopSend atomic.Bool
	stopRecv atomic.Bool
	wg       sync.WaitGroup
	sends    atomic.Int64
	pad      string // appended to every body after "|" (memory and disk fills)
	base     int    // added to producer numbers (worlds sharing a history have distinct bodies)
	round    int    // how many times start ran: bodies of each round are distinct
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newClient is how the suite's engines reach Redis: short timeouts, so that calls to a dead
// or stopped server fail fast.
func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, PoolTimeout: 2 * time.Second})
}

func newEngine(t *testing.T, addr string, clk clock.Clock, opts redisengine.Options) *redisengine.Engine {
	t.Helper()
	rdb := newClient(addr)
	opts.Logger = quiet()
	e, err := redisengine.New(rdb, clk, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(); _ = rdb.Close() })
	return e
}

func newWorld(t *testing.T, eng *redisengine.Engine) *world {
	w := &world{t: t, eng: eng, h: newHistory(),
		std: engine.Queue{ID: ids.New(), Type: engine.Standard, VisibilityTimeout: visibility, Retention: time.Hour},
		fq:  engine.Queue{ID: ids.New(), Type: engine.FIFO, VisibilityTimeout: visibility, Retention: time.Hour}}
	for _, q := range []engine.Queue{w.std, w.fq} {
		if err := eng.CreateQueue(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// start runs the producers and consumers until stop.
func (w *world) start() {
	w.round++
	for p := range producers {
		w.wg.Add(1)
		go w.produce(w.base+p, w.round)
	}
	for range consumers {
		w.wg.Add(1)
		go w.consume()
	}
}

func errClass(err error) string {
	s := err.Error()
	for _, k := range []string{"OOM", "MISCONF", "NOREPLICAS", "clock", "replicas", "reply lost", "refused", "timeout", "EOF", "reset", "unavailable"} {
		if strings.Contains(s, k) {
			return k
		}
	}
	return s
}

func (w *world) produce(p, round int) {
	defer w.wg.Done()
	ctx := context.Background()
	counters := map[int]int{}
	for i := 0; !w.stopSend.Load(); i++ {
		var q engine.Queue
		var msgs []engine.Message
		if i%2 == 0 {
			q = w.std
			for j := range 1 + i%3 {
				msgs = append(msgs, engine.Message{Body: fmt.Sprintf("s-%d-%d-%d-%d", p, round, i, j) + w.pad})
			}
		} else {
			q = w.fq
			g := p + 1000*(i/2%(fifoGroups/producers)) // this producer's groups only: order holds
			counters[g]++
			// Counters grow across rounds too: a later round's messages follow an earlier one's.
			c := round*1_000_000 + counters[g]
			msgs = []engine.Message{{Body: fmt.Sprintf("f-%d-%d", g, c) + w.pad, GroupID: strconv.Itoa(g)}}
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		res, err := w.eng.Send(cctx, q, msgs)
		cancel()
		at := time.Now()
		w.sends.Add(1)
		w.h.mu.Lock()
		for j, m := range msgs {
			m.Body = name(m.Body)
			switch {
			case err != nil:
				w.h.unknown[m.Body] = true
				w.h.sendErrs[errClass(err)]++
			case res[j].Err != nil:
				w.h.unknown[m.Body] = true
				w.h.sendErrs[errClass(res[j].Err)]++
			default:
				w.h.sentOK[m.Body] = at
			}
		}
		w.h.mu.Unlock()
		if err != nil {
			time.Sleep(10 * time.Millisecond) // the store is down: do not spin
		}
	}
}

func (w *world) consume() {
	defer w.wg.Done()
	ctx := context.Background()
	for i := 0; !w.stopRecv.Load(); i++ {
		q := w.std
		if i%2 == 1 {
			q = w.fq
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		res, err := w.eng.Receive(cctx, q, engine.ReceiveRequest{Max: 10, Visibility: visibility})
		cancel()
		if err != nil || len(res.Messages) == 0 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		w.h.mu.Lock()
		for _, m := range res.Messages {
			w.h.record(name(m.Body))
		}
		w.h.mu.Unlock()
		ds := make([]engine.Delivery, len(res.Messages))
		for j, m := range res.Messages {
			ds[j] = m.Delivery
		}
		cctx, cancel = context.WithTimeout(ctx, 3*time.Second)
		errs, err := w.eng.Ack(cctx, q, ds)
		cancel()
		if err != nil {
			continue // unknown: the messages may come back at their deadline
		}
		w.h.mu.Lock()
		for j, m := range res.Messages {
			if errs[j] == nil {
				w.h.acked[name(m.Body)] = true
			}
		}
		w.h.mu.Unlock()
	}
}

// name is a body without its padding.
func name(body string) string { n, _, _ := strings.Cut(body, "|"); return n }

// record notes one delivery (h.mu held).
func (h *history) record(body string) {
	if h.acked[body] {
		h.afterAck++
	}
	first := h.delivered[body] == 0
	h.delivered[body]++
	if !first || !strings.HasPrefix(body, "f-") {
		return
	}
	parts := strings.Split(body, "-")
	c, _ := strconv.Atoi(parts[2])
	if c < h.fifoLast[parts[1]] {
		h.fifoViol++
	}
	h.fifoLast[parts[1]] = max(h.fifoLast[parts[1]], c)
}

// finish stops the producers, lets the consumers drain both queues (every message delivered
// and acknowledged, in-flight ones back at their deadline), stops them and checks.
func (w *world) finish() figures {
	w.t.Helper()
	w.stopSend.Store(true)
	ctx := context.Background()
	empty := 0
	for deadline := time.Now().Add(60 * time.Second); empty < 3; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			w.t.Fatal("the queues did not drain within 60 s")
		}
		total := int64(0)
		for _, q := range []engine.Queue{w.std, w.fq} {
			st, err := w.eng.Stats(ctx, q)
			if err != nil {
				total = -1
				break
			}
			total += st.Visible + st.InFlight + st.Delayed
		}
		if total == 0 {
			empty++
		} else {
			empty = 0
		}
	}
	w.stopRecv.Store(true)
	w.wg.Wait()
	return w.h.check()
}

func (h *history) check() figures {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := figures{SentOK: len(h.sentOK), Unknown: len(h.unknown), Delivered: len(h.delivered),
		RedeliveredAfterAck: h.afterAck, FIFOViolations: h.fifoViol, SendErrors: h.sendErrs}
	var lost []time.Time
	for b, at := range h.sentOK {
		if h.delivered[b] == 0 {
			lost = append(lost, at)
		}
	}
	for b := range h.unknown {
		if h.delivered[b] > 0 {
			f.Recovered++
		}
	}
	for _, n := range h.delivered {
		f.Duplicates += max(n-1, 0)
	}
	f.Lost = len(lost)
	if len(h.cuts) > 0 {
		f.LostPerCut = make([]int, len(h.cuts))
		for _, at := range lost {
			i := sort.Search(len(h.cuts), func(i int) bool { return h.cuts[i].After(at) })
			if i < len(h.cuts) {
				f.LostPerCut[i]++
				f.MaxBeforeCut = max(f.MaxBeforeCut, h.cuts[i].Sub(at))
			}
		}
	}
	if len(lost) > 0 {
		sort.Slice(lost, func(i, j int) bool { return lost[i].Before(lost[j]) })
		f.LostFirst, f.LostLast = lost[0], lost[len(lost)-1]
	}
	return f
}

// awaitSends waits until n more sends were attempted (the load is running).
func (w *world) awaitSends(n int64) {
	target := w.sends.Load() + n
	for deadline := time.Now().Add(30 * time.Second); w.sends.Load() < target; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			w.t.Fatalf("the load made fewer than %d sends in 30 s", n)
		}
	}
}

// sawErr reports whether a send failed with an error of class k.
func (w *world) sawErr(k string) bool {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return w.h.sendErrs[k] > 0
}

func (h *history) errs() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for k, v := range h.sendErrs {
		out[k] = v
	}
	return out
}
