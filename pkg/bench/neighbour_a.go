package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"
)

// neighbourA is project A of the neighbour phase: a tenant running at every one of its limits.
// The phase sets A up (project, token, limits, queues, the slow push endpoint and its
// subscription) here; A's load — its sends, long polls and queue churn — runs as an aLoad,
// in this process or in one of its own (NeighbourConfig.AProcess).
type neighbourA struct {
	r       *runner
	n       NeighbourConfig
	c       *client
	token   string
	project string
	limits  map[string]int64
	// sendQ takes A's 256 KiB sends and has the slow push subscription; waitQ stays empty
	// for the long polls.
	sendQ, waitQ string

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
		"maxWaitingReceives": int64(n.MaxWaitingReceives), "maxQueues": int64(n.MaxQueues),
		"sendBytesPerSecond": n.SendBytesPerSecond}
	body, _ = json.Marshal(map[string]any{"limits": limits})
	if err := op.do(ctx, http.MethodPatch, "/v1/projects/"+url.PathEscape(p.ID), body, true, nil); err != nil {
		return nil, fmt.Errorf("setting its limits: %w", err)
	}
	a := &neighbourA{r: r, n: *n, c: newClient(r.cfg.URL, tok.Token, 4), token: tok.Token, project: p.ID, limits: limits,
		sendQ: r.cfg.Prefix + "-" + r.run + "-a-send", waitQ: r.cfg.Prefix + "-" + r.run + "-a-wait",
		pushStop: make(chan struct{})}
	for _, q := range []string{a.sendQ, a.waitQ} {
		if err := a.c.createQueue(ctx, q, "standard", 0); err != nil {
			a.c.close()
			return nil, fmt.Errorf("creating queue %s: %w", q, err)
		}
	}
	if err := a.subscribe(ctx); err != nil {
		a.cleanup()
		return nil, err
	}
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

// spec is what A's load needs to run.
func (a *neighbourA) spec() aSpec {
	return aSpec{URL: a.r.cfg.URL, Token: a.token, SendQ: a.sendQ, WaitQ: a.waitQ, ChurnPrefix: a.r.cfg.Prefix + "-" + a.r.run + "-a-churn-",
		RequestsPerSecond: a.n.RequestsPerSecond, MaxWaitingReceives: a.n.MaxWaitingReceives, ExtraPolls: a.n.ExtraPolls, Nice: a.n.ANice}
}

// pushReport adds the slow endpoint's figures to A's.
func (a *neighbourA) pushReport(t *ATraffic) {
	t.Pushes, t.PushesMaxConcurrent = a.pushes.Load(), a.pMax.Load()
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
