package e2e

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/services/queues/stack"
)

// On shutdown a waiting receive answers at once (empty), and the server stops.
func TestGracefulShutdown(t *testing.T) {
	requireStack(t, "the embedded engine counts no waiting receives, so the test cannot tell when to shut down; "+
		"services/queues/embedded's tests drain a node under a waiting receive")
	tn := newTenant(t)
	tn.queue(t, "drain", nil)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r, err := stack.New(context.Background(), stack.Options{Redis: w.rdb, Dynamo: w.ddb, Table: w.table, Keys: w.ring, OperatorToken: operator, Logger: log, SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- stack.Serve(ctx, ln, r, 10*time.Second, log) }()

	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/queues/drain/receive", strings.NewReader(`{"waitSeconds":20}`))
		req.Header.Set("Authorization", "Bearer "+tn.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- -1
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && strings.Contains(string(body), `"messages":[]`) {
			answered <- 200
			return
		}
		answered <- resp.StatusCode
	}()
	// Shut down once the receive is waiting: the engine has a watcher for the queue then.
	deadline := time.Now().Add(10 * time.Second)
	for r.Engine.Watchers() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the receive never started waiting")
		}
		time.Sleep(5 * time.Millisecond) // no event marks "request is parked"; poll the counter
	}
	stop()
	select {
	case code := <-answered:
		if code != 200 {
			t.Fatalf("waiting receive answered %d at shutdown, want 200 with no messages", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiting receive did not answer at shutdown")
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
