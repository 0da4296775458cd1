package faults

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queueshq/queues/tests/internal/crashtest"
)

// The topic load (issue 30: "exactly one copy per binding, proven under faults"): topics,
// each bound to queues (one binding's filter selects about half: attribute half=yes);
// publishers publish numbered messages (the number is the body; on a fifo topic each
// publisher owns its groups and publishes each in order) through the API replicas; one
// consumer per queue receives and acknowledges. After the load stops, the fan-out catches
// up (every binding's lag 0) and the queues drain, the checker compares per binding:
//   - expected: the publishes answered 200 (the message in "messages"), and those whose
//     answer was lost (an error, a replica killed) that the topic's log holds, the filter
//     applied;
//   - missing: expected numbers never delivered;
//   - duplicated: a messageId delivered more than once at receiveCount 1 (a second stored
//     copy: a redelivery of the one copy has a higher receiveCount), and a number delivered
//     under more than one messageId;
//   - fifo order: per queue and group, a number delivered for the first time after a
//     higher one of its group was;
//   - extra: a delivered number not expected (a filtered-out message, or one never
//     published).

// topicShape says which topics the load has and how many queues each feeds.
type topicShape struct {
	standard, fifo int
	bindings       int // per topic; the second binding has the filter
}

type ttopic struct {
	id     string
	fifo   bool
	queues []*tqueue
	next   atomic.Int64
	// under topicLoad.mu: body number -> selected by the filter (half=yes)
	acked, unknown map[int]bool
}

type tqueue struct {
	id, binding string
	filtered    bool
	// under topicLoad.mu
	firsts     map[string]int          // messageId -> deliveries at receiveCount 1
	ids        map[int]map[string]bool // body number -> messageIds delivered
	lastGroup  map[string]int          // fifo: group -> highest number delivered
	deliveries int
	fifoViol   int
}

type topicLoad struct {
	t      *testing.T
	s      *stack
	token  string
	topics []*ttopic

	mu       sync.Mutex
	pubErrs  map[string]int
	stopPub  atomic.Bool
	stopCons atomic.Bool
	pubWG    sync.WaitGroup
	consWG   sync.WaitGroup
	pubs     atomic.Int64 // publish calls made
	// gate pauses the consumers: each holds it for reading across a receive and its ack.
	gate sync.RWMutex
}

const (
	tPublishers = 3 // per topic
	tVisibility = 2 // seconds
)

func newTopicLoad(t *testing.T, s *stack, shape topicShape) *topicLoad {
	t.Helper()
	tl := &topicLoad{t: t, s: s, token: s.project(), pubErrs: map[string]int{}}
	for i := range shape.standard + shape.fifo {
		tl.topics = append(tl.topics, tl.createTopic(i, i >= shape.standard, shape.bindings))
	}
	return tl
}

func (tl *topicLoad) call(method, path string, in, out any) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return crashtest.Call(ctx, tl.s.hc, method, tl.s.url()+path, tl.token, in, out)
}

// must is call for the setup: anything but want fails the test.
func (tl *topicLoad) must(want int, method, path string, in, out any) {
	tl.t.Helper()
	st, err := tl.call(method, path, in, out)
	if err != nil || st != want {
		tl.t.Fatalf("%s %s: %d %v, want %d", method, path, st, err, want)
	}
}

func (tl *topicLoad) createTopic(i int, fifo bool, bindings int) *ttopic {
	typ := map[bool]string{false: "standard", true: "fifo"}[fifo]
	tp := &ttopic{fifo: fifo, acked: map[int]bool{}, unknown: map[int]bool{}}
	var a struct{ ID string }
	tl.must(http.StatusCreated, http.MethodPost, "/v1/topics", map[string]any{"name": fmt.Sprintf("t%d-%s", i, typ), "type": typ}, &a)
	tp.id = a.ID
	for j := range bindings {
		q := &tqueue{filtered: j == 1, firsts: map[string]int{}, ids: map[int]map[string]bool{}, lastGroup: map[string]int{}}
		tl.must(http.StatusCreated, http.MethodPost, "/v1/queues",
			map[string]any{"name": fmt.Sprintf("t%d-q%d-%s", i, j, typ), "type": typ, "visibilityTimeoutSeconds": tVisibility}, &a)
		q.id = a.ID
		src := map[string]any{"topic": tp.id, "from": "earliest"}
		if q.filtered {
			src["filter"] = map[string]any{"attributes": map[string]any{"half": "yes"}}
		}
		tl.must(http.StatusCreated, http.MethodPost, "/v1/queues/"+q.id+"/sources", src, &a)
		q.binding = a.ID
		tp.queues = append(tp.queues, q)
	}
	return tp
}

// start runs the publishers and the consumers until finish.
func (tl *topicLoad) start() {
	for _, tp := range tl.topics {
		for p := range tPublishers {
			tl.pubWG.Add(1)
			go tl.publish(tp, p)
		}
		for _, q := range tp.queues {
			tl.consWG.Add(1)
			go tl.consume(tp, q)
		}
	}
}

func yesNo(b bool) string { return map[bool]string{false: "no", true: "yes"}[b] }

// publish publishes batches of 1–3 numbered messages (fifo: of one group this publisher
// owns, in order) until stopped.
func (tl *topicLoad) publish(tp *ttopic, p int) {
	defer tl.pubWG.Done()
	for i := 0; !tl.stopPub.Load(); i++ {
		group := fmt.Sprintf("g%d.%d", p, i%2)
		ns := make([]int, 1+i%3)
		msgs := make([]map[string]any, len(ns))
		for j := range ns {
			ns[j] = int(tp.next.Add(1))
			m := map[string]any{"body": strconv.Itoa(ns[j]), "attributes": map[string]any{"half": yesNo(ns[j]%2 == 0)}}
			if tp.fifo {
				m["groupId"] = group
			}
			msgs[j] = m
		}
		var ans struct {
			Messages []struct{ Index int } `json:"messages"`
		}
		st, err := tl.call(http.MethodPost, "/v1/topics/"+tp.id+"/messages", map[string]any{"messages": msgs}, &ans)
		tl.pubs.Add(1)
		ok := map[int]bool{}
		if err == nil && st == http.StatusOK {
			for _, m := range ans.Messages {
				ok[m.Index] = true
			}
		}
		tl.mu.Lock()
		for j, n := range ns {
			if ok[j] {
				tp.acked[n] = n%2 == 0
			} else {
				tp.unknown[n] = n%2 == 0
				tl.pubErrs[sendErrClass(st, err)]++
			}
		}
		tl.mu.Unlock()
		if err != nil {
			time.Sleep(10 * time.Millisecond) // the service is down: do not spin
		}
	}
}

type tdelivery struct {
	MessageID     string `json:"messageId"`
	Body          string `json:"body"`
	ReceiptHandle string `json:"receiptHandle"`
	ReceiveCount  int    `json:"receiveCount"`
	GroupID       string `json:"groupId"`
}

// consume long-polls q, records and acknowledges what it gets, until stopped.
func (tl *topicLoad) consume(tp *ttopic, q *tqueue) {
	defer tl.consWG.Done()
	for !tl.stopCons.Load() {
		tl.gate.RLock()
		ok := tl.receiveOnce(tp, q)
		tl.gate.RUnlock()
		if !ok {
			time.Sleep(10 * time.Millisecond) // the service is down: do not spin
		}
	}
}

func (tl *topicLoad) receiveOnce(tp *ttopic, q *tqueue) bool {
	var ans struct{ Messages []tdelivery }
	st, err := tl.call(http.MethodPost, "/v1/queues/"+q.id+"/receive", map[string]any{"maxMessages": 10, "waitSeconds": 1}, &ans)
	if err != nil || st != http.StatusOK {
		return false
	}
	if len(ans.Messages) == 0 {
		return true
	}
	handles := make([]string, len(ans.Messages))
	tl.mu.Lock()
	for i, m := range ans.Messages {
		q.record(tp.fifo, m)
		handles[i] = m.ReceiptHandle
	}
	tl.mu.Unlock()
	// An ack that fails leaves the messages to come back at their deadline (a redelivery,
	// at a higher receiveCount).
	_, _ = tl.call(http.MethodPost, "/v1/receipts/ack", map[string]any{"receiptHandles": handles}, &struct{}{})
	return true
}

// record notes one delivery (topicLoad.mu held).
func (q *tqueue) record(fifo bool, m tdelivery) {
	q.deliveries++
	n, err := strconv.Atoi(m.Body)
	if err != nil {
		n = -1 // not the load's: counted as extra
	}
	if m.ReceiveCount == 1 {
		q.firsts[m.MessageID]++
	}
	first := len(q.ids[n]) == 0
	if q.ids[n] == nil {
		q.ids[n] = map[string]bool{}
	}
	q.ids[n][m.MessageID] = true
	if fifo && first {
		if n < q.lastGroup[m.GroupID] {
			q.fifoViol++
		}
		q.lastGroup[m.GroupID] = max(q.lastGroup[m.GroupID], n)
	}
}

// pause stops the consumers (after their calls in progress) until resume.
func (tl *topicLoad) pause()  { tl.gate.Lock() }
func (tl *topicLoad) resume() { tl.gate.Unlock() }

// awaitPublishes waits until n more publish calls were made (the load is running).
func (tl *topicLoad) awaitPublishes(n int64) {
	tl.t.Helper()
	target := tl.pubs.Load() + n
	for deadline := time.Now().Add(60 * time.Second); tl.pubs.Load() < target; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			tl.t.Fatalf("the topic load made fewer than %d publishes in 60 s (errors %v)", n, tl.errs())
		}
	}
}

func (tl *topicLoad) errs() map[string]int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	out := map[string]int{}
	for k, v := range tl.pubErrs {
		out[k] = v
	}
	return out
}

// lagging answers the bindings not caught up (their lag, or why it cannot be read) and
// their total lag (-1: a binding could not be read).
func (tl *topicLoad) lagging() (left []string, total int64) {
	for _, tp := range tl.topics {
		for _, q := range tp.queues {
			var a struct{ Sources []map[string]any }
			if st, err := tl.call(http.MethodGet, "/v1/queues/"+q.id+"/sources", nil, &a); err != nil || st != http.StatusOK {
				left = append(left, fmt.Sprintf("queue %s: %d %v", q.id, st, err))
				total = -1
				continue
			}
			for _, b := range a.Sources {
				if lag, _ := b["lag"].(float64); lag != 0 {
					left = append(left, fmt.Sprintf("binding %v (queue %s): lag %v", b["id"], q.id, b["lag"]))
					if total >= 0 {
						total += int64(lag)
					}
				}
			}
		}
	}
	return left, total
}

// awaitCaughtUp waits until every binding's lag is 0 (three reads in a row). The backlog a
// fast load leaves depends on the machine, so the bound is on progress: it fails when the
// total lag has not fallen for stall (the fan-out stopped), not after a fixed time.
func (tl *topicLoad) awaitCaughtUp(stall time.Duration) {
	tl.t.Helper()
	best, since, ok := int64(math.MaxInt64), time.Now(), 0
	for ; ok < 3; time.Sleep(100 * time.Millisecond) {
		left, total := tl.lagging()
		if len(left) == 0 {
			ok++
			continue
		}
		ok = 0
		if total >= 0 && total < best {
			best, since = total, time.Now()
		}
		if time.Since(since) > stall {
			tl.t.Fatalf("the fan-out made no progress for %v: %s\nthe replicas:%s", stall, strings.Join(left, "; "), fanoutState(tl.s))
		}
	}
}

// queuesLeft answers the queues not empty (visible, in flight or delayed).
func (tl *topicLoad) queuesLeft() []string {
	var left []string
	for _, tp := range tl.topics {
		for _, q := range tp.queues {
			var a struct {
				Counts struct{ Visible, InFlight, Delayed int64 } `json:"counts"`
			}
			if st, err := tl.call(http.MethodGet, "/v1/queues/"+q.id, nil, &a); err != nil || st != http.StatusOK {
				left = append(left, fmt.Sprintf("queue %s: %d %v", q.id, st, err))
			} else if c := a.Counts; c.Visible+c.InFlight+c.Delayed != 0 {
				left = append(left, fmt.Sprintf("queue %s: visible %d, in flight %d, delayed %d", q.id, c.Visible, c.InFlight, c.Delayed))
			}
		}
	}
	return left
}

// await polls check until it answers nothing three times in a row, within limit.
func (tl *topicLoad) await(what string, limit time.Duration, check func() []string) {
	tl.t.Helper()
	ok := 0
	for deadline := time.Now().Add(limit); ok < 3; time.Sleep(100 * time.Millisecond) {
		left := check()
		if len(left) == 0 {
			ok++
			continue
		}
		ok = 0
		if time.Now().After(deadline) {
			tl.t.Fatalf("%s not within %v: %s", what, limit, strings.Join(left, "; "))
		}
	}
}

// logged reads topic tp's whole log: the body numbers it holds.
func (tl *topicLoad) logged(tp *ttopic) map[int]bool {
	tl.t.Helper()
	out := map[int]bool{}
	cursor := ""
	for {
		path := "/v1/topics/" + tp.id + "/messages?limit=1000"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var a struct {
			Messages   []struct{ Body string }
			NextCursor *string
		}
		tl.must(http.StatusOK, http.MethodGet, path, nil, &a)
		for _, m := range a.Messages {
			if n, err := strconv.Atoi(m.Body); err == nil {
				out[n] = true
			}
		}
		if a.NextCursor == nil || *a.NextCursor == "" {
			return out
		}
		cursor = *a.NextCursor
	}
}

// fanoutState is what the API replicas tell of their fan-out (for a stalled catch-up): their
// queues_fanout_ metrics and their logs' tails.
func fanoutState(s *stack) string {
	s.mu.Lock()
	apis := append([]*proc(nil), s.apis...)
	s.mu.Unlock()
	var b strings.Builder
	for _, p := range apis {
		fmt.Fprintf(&b, "\n%s:", p.name)
		if resp, err := http.Get(p.metrics); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, line := range strings.Split(string(body), "\n") {
				if strings.HasPrefix(line, "queues_fanout_") && !strings.Contains(line, "_bucket") {
					b.WriteString("\n  " + line)
				}
			}
		}
		b.WriteString("\n  log: " + crashtest.TailOf(p.log))
	}
	for _, p := range apis { // where each replica's fan-out is: SIGQUIT dumps its goroutines
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
		}
		dump, _ := os.ReadFile(p.log)
		for _, g := range strings.Split(string(dump), "\n\n") {
			if strings.Contains(g, "fanout") {
				fmt.Fprintf(&b, "\n%s goroutine: %s", p.name, g)
			}
		}
	}
	return b.String()
}
