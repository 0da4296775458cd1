package faults

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/tests/internal/crashtest"
)

// traffic is the load of the tests that run the whole service (stack): producers send unique
// bodies over HTTP to every queue (in order, per group, to the fifo ones); pull consumers
// long-poll the pull queues and acknowledge what they get; the pusher fleet pushes the push
// queues' messages to an endpoint in the test, which records every push and answers 200. The
// history and its checks are load_test.go's (lost, delivered again after a successful ack,
// fifo order), plus what only a push shows: a message pushed again after the endpoint had
// answered 200 for it, and a push that arrived after the visibility deadline it carries (a
// delivery whose lease had ended — see F5).
type traffic struct {
	t      *testing.T
	s      *stack
	token  string
	queues []hqueue
	h      *history
	ep     *httptest.Server
	wait   int // a pull consumer's waitSeconds (long poll)

	// what only pushes show (h.mu)
	answered  map[string]bool
	pushed    map[string]int // body -> how many times it was pushed
	pushes    int
	pushAgain int
	late      int
	lateReqs  int
	reFirst   int // messages first pushed at a receiveCount above 1 (given back, or held to their deadline)

	// hook, when set (before start), sees each push request's bodies before it is answered;
	// it may block, and answers the status it returns (0: 200). Only a 200 marks a message
	// answered.
	hook func(bodies []string) int

	stopSend, stopRecv atomic.Bool
	wg                 sync.WaitGroup
	sends              atomic.Int64
	round              int
}

// hqueue is one queue of the traffic.
type hqueue struct {
	id         string
	fifo, push bool
}

// trafficShape says which queues the traffic has.
type trafficShape struct {
	pushStd, pushFIFO, pullStd, pullFIFO int
	pushDelay                            time.Duration // the endpoint's answer takes this long
	batchWindowMs                        int           // the subscriptions' batchWindowMs
	// pushVisibility is the pushed queues' visibilityTimeoutSeconds (0: hVisibility). Set
	// beyond the drain's wait, a message a pusher held to its deadline fails the drain.
	pushVisibility int
	maxInFlight    int // the subscriptions' maxInFlight (0: 4)
}

const (
	hProducers  = 3
	hConsumers  = 3
	hGroups     = 2 // per producer and fifo queue
	hVisibility = 2 // seconds; a pushed message's deadline is 2 s + 5 s (timeoutSeconds 2)
)

func newTraffic(t *testing.T, s *stack, shape trafficShape) *traffic {
	t.Helper()
	tr := &traffic{t: t, s: s, token: s.project(), h: newHistory(), wait: 1, answered: map[string]bool{}, pushed: map[string]int{}}
	tr.ep = httptest.NewServer(tr.endpoint(shape.pushDelay))
	t.Cleanup(tr.ep.Close)
	add := func(n int, fifo, push bool) {
		for range n {
			vis := hVisibility
			if push && shape.pushVisibility > 0 {
				vis = shape.pushVisibility
			}
			tr.queues = append(tr.queues, tr.createQueue(fifo, push, vis, shape))
		}
	}
	add(shape.pushStd, false, true)
	add(shape.pushFIFO, true, true)
	add(shape.pullStd, false, false)
	add(shape.pullFIFO, true, false)
	return tr
}

func (tr *traffic) call(method, path string, in, out any) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return crashtest.Call(ctx, tr.s.hc, method, tr.s.url()+path, tr.token, in, out)
}

func (tr *traffic) createQueue(fifo, push bool, visibility int, shape trafficShape) hqueue {
	typ := map[bool]string{false: "standard", true: "fifo"}[fifo]
	var q struct{ ID string }
	name := fmt.Sprintf("q%d-%s-%v", len(tr.queues), typ, push)
	if _, err := tr.call(http.MethodPost, "/v1/queues", map[string]any{"name": name, "type": typ, "visibilityTimeoutSeconds": visibility}, &q); err != nil {
		tr.t.Fatal(err)
	}
	if push {
		sub := map[string]any{"endpoint": tr.ep.URL, "timeoutSeconds": 2, "batchSize": 10, "maxInFlight": cmp.Or(shape.maxInFlight, 4), "batchWindowMs": shape.batchWindowMs}
		if _, err := tr.call(http.MethodPost, "/v1/queues/"+q.ID+"/subscription", sub, &map[string]any{}); err != nil {
			tr.t.Fatal(err)
		}
	}
	return hqueue{id: q.ID, fifo: fifo, push: push}
}

// endpoint is the subscriber: it records each pushed message, then answers 200 after delay.
func (tr *traffic) endpoint(delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Messages []struct {
				Body               string `json:"body"`
				VisibilityDeadline string `json:"visibilityDeadline"`
				ReceiveCount       int    `json:"receiveCount"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		at := time.Now()
		tr.h.mu.Lock()
		tr.pushes++
		late := 0
		for _, m := range in.Messages {
			if dl, err := time.Parse(timeFormat, m.VisibilityDeadline); err == nil && at.After(dl) {
				late++
			}
			if tr.answered[m.Body] {
				tr.pushAgain++
			}
			if tr.pushed[m.Body] == 0 && m.ReceiveCount > 1 {
				tr.reFirst++
			}
			tr.pushed[m.Body]++
			tr.h.record(m.Body)
		}
		tr.late += late
		if late > 0 {
			tr.lateReqs++
		}
		tr.h.mu.Unlock()
		time.Sleep(delay) // the subscriber's work
		status := http.StatusOK
		if tr.hook != nil {
			bodies := make([]string, len(in.Messages))
			for i, m := range in.Messages {
				bodies[i] = m.Body
			}
			status = cmp.Or(tr.hook(bodies), http.StatusOK)
		}
		if status == http.StatusOK {
			tr.h.mu.Lock()
			for _, m := range in.Messages {
				tr.answered[m.Body] = true
			}
			tr.h.mu.Unlock()
		}
		w.WriteHeader(status)
	})
}

const timeFormat = "2006-01-02T15:04:05.000Z"

// start runs the producers and the pull consumers until stopped.
func (tr *traffic) start() {
	tr.round++
	for p := range hProducers {
		tr.wg.Add(1)
		go tr.produce(p, tr.round)
	}
	for c := range hConsumers {
		tr.wg.Add(1)
		go tr.consume(c)
	}
}

func (tr *traffic) produce(p, round int) {
	defer tr.wg.Done()
	counters := map[string]int{}
	for i := 0; !tr.stopSend.Load(); i++ {
		qi := i % len(tr.queues)
		q := tr.queues[qi]
		var bodies []string
		var msgs []map[string]any
		if q.fifo {
			g := fmt.Sprintf("%d.%d", qi, p+hProducers*(i/len(tr.queues)%hGroups)) // this producer's groups only
			counters[g]++
			b := fmt.Sprintf("f-%s-%d", g, round*1_000_000+counters[g])
			bodies, msgs = []string{b}, []map[string]any{{"body": b, "groupId": g}}
		} else {
			for j := range 1 + i%3 {
				b := fmt.Sprintf("s-%d-%d-%d-%d-%d", qi, p, round, i, j)
				bodies, msgs = append(bodies, b), append(msgs, map[string]any{"body": b})
			}
		}
		var ans struct {
			Messages []struct{ Index int } `json:"messages"`
		}
		st, err := tr.call(http.MethodPost, "/v1/queues/"+q.id+"/messages", map[string]any{"messages": msgs}, &ans)
		at := time.Now()
		tr.sends.Add(1)
		tr.h.mu.Lock()
		ok := map[int]bool{}
		if err == nil && st == http.StatusOK {
			for _, m := range ans.Messages {
				ok[m.Index] = true
			}
		}
		for j, b := range bodies {
			if ok[j] {
				tr.h.sentOK[b] = at
			} else {
				tr.h.unknown[b] = true
				tr.h.sendErrs[sendErrClass(st, err)]++
			}
		}
		tr.h.mu.Unlock()
		if err != nil {
			time.Sleep(10 * time.Millisecond) // the service is down: do not spin
		}
	}
}

func sendErrClass(status int, err error) string {
	if status != 0 {
		return strconv.Itoa(status)
	}
	return errClass(err)
}

type received struct {
	Body          string `json:"body"`
	ReceiptHandle string `json:"receiptHandle"`
}

func (tr *traffic) consume(c int) {
	defer tr.wg.Done()
	var pull []hqueue
	for _, q := range tr.queues {
		if !q.push {
			pull = append(pull, q)
		}
	}
	for i := c; len(pull) > 0 && !tr.stopRecv.Load(); i++ {
		q := pull[i%len(pull)]
		var ans struct{ Messages []received }
		st, err := tr.call(http.MethodPost, "/v1/queues/"+q.id+"/receive", map[string]any{"maxMessages": 10, "waitSeconds": tr.wait}, &ans)
		if err != nil || st != http.StatusOK {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if len(ans.Messages) == 0 {
			continue
		}
		handles := make([]string, len(ans.Messages))
		tr.h.mu.Lock()
		for j, m := range ans.Messages {
			tr.h.record(m.Body)
			handles[j] = m.ReceiptHandle
		}
		tr.h.mu.Unlock()
		var res struct {
			Results []struct {
				Index int             `json:"index"`
				Error json.RawMessage `json:"error"`
			} `json:"results"`
		}
		if st, err := tr.call(http.MethodPost, "/v1/receipts/ack", map[string]any{"receiptHandles": handles}, &res); err != nil || st != http.StatusOK {
			continue // unknown: they may come back at their deadline
		}
		tr.h.mu.Lock()
		for _, r := range res.Results {
			if len(r.Error) == 0 && r.Index >= 0 && r.Index < len(ans.Messages) {
				tr.h.acked[ans.Messages[r.Index].Body] = true
			}
		}
		tr.h.mu.Unlock()
	}
}

// pushedQueue tells whether body was sent to a pushed queue (bodies name their queue's index:
// s-<queue>-… and f-<queue>.<group>-…).
func (tr *traffic) pushedQueue(body string) bool {
	parts := strings.Split(body, "-")
	if len(parts) < 2 {
		return false
	}
	qs, _, _ := strings.Cut(parts[1], ".")
	qi, err := strconv.Atoi(qs)
	return err == nil && qi >= 0 && qi < len(tr.queues) && tr.queues[qi].push
}

// awaitSends waits until n more sends were attempted.
func (tr *traffic) awaitSends(n int64) {
	target := tr.sends.Load() + n
	for deadline := time.Now().Add(60 * time.Second); tr.sends.Load() < target; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			tr.t.Fatalf("the load made fewer than %d sends in 60 s", n)
		}
	}
}

// idle reports whether every queue is empty (nothing visible, in flight or delayed), and
// what is left where not.
func (tr *traffic) idle() (bool, string) {
	var left []string
	for _, q := range tr.queues {
		var a struct {
			Counts struct{ Visible, InFlight, Delayed int64 } `json:"counts"`
		}
		if _, err := tr.call(http.MethodGet, "/v1/queues/"+q.id, nil, &a); err != nil {
			return false, err.Error()
		}
		if c := a.Counts; c.Visible+c.InFlight+c.Delayed != 0 {
			left = append(left, fmt.Sprintf("queue %s (fifo %v, push %v): visible %d, in flight %d, delayed %d", q.id, q.fifo, q.push, c.Visible, c.InFlight, c.Delayed))
		}
	}
	return len(left) == 0, strings.Join(left, "; ")
}

// finish stops the producers, waits until every queue is empty three reads in a row (pushed
// and pulled messages settled, in-flight ones back at their deadline and delivered), stops
// the consumers and checks the history.
func (tr *traffic) finish() figures {
	tr.t.Helper()
	tr.stopSend.Store(true)
	empty := 0
	for deadline := time.Now().Add(90 * time.Second); empty < 3; time.Sleep(200 * time.Millisecond) {
		idle, left := tr.idle()
		if time.Now().After(deadline) {
			tr.t.Fatalf("the queues did not drain within 90 s (stuck): %s", left)
		}
		if idle {
			empty++
		} else {
			empty = 0
		}
	}
	tr.stopRecv.Store(true)
	tr.wg.Wait()
	f := tr.h.check()
	tr.h.mu.Lock()
	f.Pushes, f.PushedAgain, f.LatePushes, f.LateRequests = tr.pushes, tr.pushAgain, tr.late, tr.lateReqs
	f.ReceivedBeforeFirstPush = tr.reFirst
	for b := range tr.h.sentOK {
		if tr.pushedQueue(b) && !tr.answered[b] {
			f.NeverAnswered++
		}
	}
	for _, n := range tr.pushed {
		f.PushDuplicates += max(n-1, 0)
	}
	tr.h.mu.Unlock()
	return f
}
