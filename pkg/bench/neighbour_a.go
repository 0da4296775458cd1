package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// neighbourA is project A of the neighbour phase: a tenant running at every one of its limits.
type neighbourA struct {
	r       *runner
	n       NeighbourConfig
	c       *client
	project string
	limits  map[string]int64
	// sendQ takes A's 256 KiB sends and has the slow push subscription; waitQ stays empty
	// for the long polls.
	sendQ, waitQ string

	requests atomic.Int64
	accepted tally
	refused  tally
	// parked is how many of A's slot-holding long polls are waiting for an answer now.
	parked                atomic.Int64
	extraTried, extraOnce atomic.Int64
	extraMu               sync.Mutex
	extraHist             *hdrhistogram.Histogram

	pushSrv                *http.Server
	pushStop               chan struct{}
	pushes, pushConc, pMax atomic.Int64
	leftover               []string // churn queues still there when A stopped
}

// newNeighbourA creates project A, its token, its limits, its two queues and its push
// endpoint and subscription.
func (r *runner) newNeighbourA(ctx context.Context, n *NeighbourConfig) (*neighbourA, error) {
	op := newClient(r.cfg.URL, n.OperatorToken, 2)
	defer op.close()
	var p struct {
		ID string `json:"id"`
	}
	body, _ := json.Marshal(map[string]any{"name": "bench neighbour " + r.run})
	if err := op.do(ctx, http.MethodPost, "/v1/projects", body, true, &p); err != nil {
		return nil, fmt.Errorf("creating the project: %w", err)
	}
	var tok struct {
		Token string `json:"token"`
	}
	body, _ = json.Marshal(map[string]any{"name": "neighbour", "scopes": []string{"*"}})
	if err := op.do(ctx, http.MethodPost, "/v1/projects/"+url.PathEscape(p.ID)+"/tokens", body, true, &tok); err != nil {
		return nil, fmt.Errorf("creating a token: %w", err)
	}
	limits := map[string]int64{"maxStoredBytes": n.MaxStoredBytes, "requestsPerSecond": int64(n.RequestsPerSecond),
		"maxWaitingReceives": int64(n.MaxWaitingReceives), "maxQueues": int64(n.MaxQueues)}
	body, _ = json.Marshal(map[string]any{"limits": limits})
	if err := op.do(ctx, http.MethodPatch, "/v1/projects/"+url.PathEscape(p.ID), body, true, nil); err != nil {
		return nil, fmt.Errorf("setting its limits: %w", err)
	}
	conns := n.MaxWaitingReceives + n.ExtraPolls + 8
	a := &neighbourA{r: r, n: *n, c: newClient(r.cfg.URL, tok.Token, conns), project: p.ID, limits: limits,
		sendQ: r.cfg.Prefix + "-" + r.run + "-a-send", waitQ: r.cfg.Prefix + "-" + r.run + "-a-wait",
		extraHist: newHist(), pushStop: make(chan struct{})}
	for _, q := range []string{a.sendQ, a.waitQ} {
		if err := a.c.createQueue(ctx, q, "standard"); err != nil {
			a.c.close()
			return nil, fmt.Errorf("creating queue %s: %w", q, err)
		}
	}
	if err := a.subscribe(ctx); err != nil {
		a.cleanup()
		return nil, err
	}
	a.c.noRetry = true // from here on every refusal is counted
	return a, nil
}

// subscribe starts the endpoint that takes PushDelay to answer and subscribes sendQ to it.
func (a *neighbourA) subscribe(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.r.cfg.PushListen)
	if err != nil {
		return fmt.Errorf("push endpoint: %w", err)
	}
	a.pushSrv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		a.pushes.Add(1)
		cur := a.pushConc.Add(1)
		defer a.pushConc.Add(-1)
		for {
			m := a.pMax.Load()
			if cur <= m || a.pMax.CompareAndSwap(m, cur) {
				break
			}
		}
		t := time.NewTimer(a.n.PushDelay)
		defer t.Stop()
		select {
		case <-t.C:
			w.WriteHeader(http.StatusNoContent)
		case <-req.Context().Done():
		case <-a.pushStop:
		}
	})}
	go func() { _ = a.pushSrv.Serve(ln) }()
	sub, _ := json.Marshal(map[string]any{"endpoint": "http://" + ln.Addr().String() + "/",
		"batchSize": 1, "maxInFlight": 100, "timeoutSeconds": a.n.PushTimeout})
	if err := a.c.do(ctx, http.MethodPost, queuePath(a.sendQ)+"/subscription", sub, true, nil); err != nil {
		return fmt.Errorf("creating the push subscription: %w", err)
	}
	return nil
}

// call makes one of A's requests and counts its outcome under kind.
func (a *neighbourA) call(ctx context.Context, kind, method, path string, body []byte, out any) bool {
	a.requests.Add(1)
	err := a.c.do(ctx, method, path, body, true, out)
	if err == nil {
		a.accepted.add(kind)
		return true
	}
	if ctx.Err() == nil {
		a.refused.add(errKey(err))
	}
	return false
}

// start runs A's load until ctx ends; the channel closes when every part has stopped.
func (a *neighbourA) start(ctx context.Context) <-chan struct{} {
	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	const senders = 4
	for range senders {
		run(a.sender(senders))
	}
	for range a.n.MaxWaitingReceives {
		run(a.parker)
	}
	for range a.n.ExtraPolls {
		run(a.extraPoller)
	}
	run(a.churn)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// sender sends one 256 KiB message per request, its share of requestsPerSecond.
func (a *neighbourA) sender(of int) func(context.Context) {
	body := []byte(`{"messages":[{"body":"` + strings.Repeat("a", 256*1024) + `"}]}`)
	every := time.Duration(float64(time.Second) * float64(of) / float64(a.n.RequestsPerSecond))
	return func(ctx context.Context) {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for ctx.Err() == nil {
			a.call(ctx, "send", http.MethodPost, queuePath(a.sendQ)+"/messages", body, nil)
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
	}
}

// parker holds one long poll on the empty queue at all times.
func (a *neighbourA) parker(ctx context.Context) {
	body := []byte(`{"maxMessages":1,"waitSeconds":20}`)
	for ctx.Err() == nil {
		a.parked.Add(1)
		t0 := time.Now()
		a.call(ctx, "park", http.MethodPost, queuePath(a.waitQ)+"/receive", body, nil)
		a.parked.Add(-1)
		if time.Since(t0) < time.Second {
			pause(ctx, 50*time.Millisecond) // refused, or answered at once: not in a loop
		}
	}
}

// extraPoller tries long polls beyond maxWaitingReceives once all of A's slots are held.
func (a *neighbourA) extraPoller(ctx context.Context) {
	body := []byte(`{"maxMessages":1,"waitSeconds":20}`)
	held := int64(a.n.MaxWaitingReceives)
	// Start once every slot-holding poll was sent, and has had time to reach the server.
	for ctx.Err() == nil && a.parked.Load() < held {
		pause(ctx, 20*time.Millisecond)
	}
	pause(ctx, 500*time.Millisecond)
	for ctx.Err() == nil {
		if a.parked.Load() < held {
			pause(ctx, 20*time.Millisecond)
			continue
		}
		var got receiveResp
		a.requests.Add(1)
		a.extraTried.Add(1)
		t0 := time.Now()
		err := a.c.do(ctx, http.MethodPost, queuePath(a.waitQ)+"/receive", body, true, &got)
		d := time.Since(t0)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			a.refused.add(errKey(err))
			pause(ctx, 10*time.Millisecond) // Retry-After is ignored, but the generator's CPU is not free
		case len(got.Messages) == 0 && a.parked.Load() >= held:
			a.extraOnce.Add(1)
			a.accepted.add("extra poll (empty)")
			a.extraMu.Lock()
			_ = a.extraHist.RecordValue(micros(d))
			a.extraMu.Unlock()
		default:
			a.accepted.add("extra poll (other)")
		}
	}
}

// churn creates queues until maxQueues refuses one, deletes them, and starts again.
func (a *neighbourA) churn(ctx context.Context) {
	var mine []string
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("%s-%s-a-churn-%d", a.r.cfg.Prefix, a.r.run, i)
		body, _ := json.Marshal(map[string]any{"name": name})
		a.requests.Add(1)
		err := a.c.do(ctx, http.MethodPost, "/v1/queues", body, true, nil)
		if err == nil {
			a.accepted.add("create")
			mine = append(mine, name)
			continue
		}
		if ctx.Err() != nil {
			break
		}
		k := errKey(err)
		a.refused.add(k)
		if !strings.HasPrefix(k, "403 quota_exceeded") {
			pause(ctx, 50*time.Millisecond)
			continue
		}
		for len(mine) > 0 && ctx.Err() == nil {
			if a.call(ctx, "delete", http.MethodDelete, queuePath(mine[0]), nil, nil) {
				mine = mine[1:]
			} else {
				pause(ctx, 50*time.Millisecond)
			}
		}
	}
	a.leftover = mine // deleted by cleanup
}

// pause waits d or until ctx ends; false when ctx ended.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// report summarises A's traffic.
func (a *neighbourA) report() ATraffic {
	a.extraMu.Lock()
	lat := quietPollLatency(a.extraHist)
	a.extraMu.Unlock()
	return ATraffic{Requests: a.requests.Load(), Accepted: a.accepted.snapshot(), Refusals: a.refused.snapshot(),
		ExtraPolls: a.extraTried.Load(), ExtraAtOnce: a.extraOnce.Load(), ExtraLatency: lat,
		Pushes: a.pushes.Load(), PushesMaxConcurrent: a.pMax.Load()}
}

// cleanup deletes A's queues (its subscription with them) and stops the push endpoint.
func (a *neighbourA) cleanup() {
	close(a.pushStop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a.c.noRetry = false
	for _, q := range append([]string{a.sendQ, a.waitQ}, a.leftover...) {
		_ = a.c.deleteQueue(ctx, q)
	}
	if a.pushSrv != nil {
		_ = a.pushSrv.Close()
	}
	a.c.close()
}
