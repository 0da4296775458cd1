package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	qclient "github.com/queueshq/queues/sdk/go/client"
)

// pushBody is the part of a push the receiver reads.
type pushBody struct {
	Messages []struct {
		Body string `json:"body"`
	} `json:"messages"`
}

// push runs the push phase: a receiver of its own, a subscription to it, producers.
func (r *runner) push(ctx context.Context, i int) (*PhaseReport, error) {
	queue, err := r.newQueue(ctx, PhasePush, i)
	if err != nil {
		return nil, err
	}
	st := newStats(r.cfg.Count)
	var secret atomic.Value // string
	secret.Store("")
	var batches, refused atomic.Int64
	done := make(chan struct{})
	var doneOnce atomic.Bool
	var end, startNs atomic.Int64
	recv := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		body, err := io.ReadAll(io.LimitReader(req.Body, 8<<20))
		if err != nil {
			refused.Add(1)
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		if err := qclient.Verify([]string{secret.Load().(string)}, req.Header, body, now, 0); err != nil {
			refused.Add(1)
			http.Error(w, "signature", http.StatusUnauthorized)
			return
		}
		var pb pushBody
		if err := json.Unmarshal(body, &pb); err != nil {
			refused.Add(1)
			http.Error(w, "body", http.StatusBadRequest)
			return
		}
		for _, m := range pb.Messages {
			if !st.deliver(m.Body, now) {
				refused.Add(1)
				http.Error(w, "foreign message", http.StatusBadRequest)
				return
			}
		}
		batches.Add(1)
		st.acked.Add(int64(len(pb.Messages)))
		w.WriteHeader(http.StatusNoContent) // every message of the batch acknowledged
		if st.delivered.Load() >= int64(r.cfg.Count) && doneOnce.CompareAndSwap(false, true) {
			end.Store(time.Now().UnixNano() - startNs.Load())
			close(done)
		}
	})
	ln, err := net.Listen("tcp", r.cfg.PushListen)
	if err != nil {
		return nil, fmt.Errorf("push receiver: %w", err)
	}
	srv := &http.Server{Handler: recv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	sub, _ := json.Marshal(map[string]any{"endpoint": "http://" + ln.Addr().String() + "/",
		"batchSize": r.cfg.Batch, "maxInFlight": min(max(r.cfg.InFlight, 1), 100)})
	var created struct {
		SigningSecret string `json:"signingSecret"`
	}
	if err := r.c.do(ctx, http.MethodPost, queuePath(queue)+"/subscription", sub, true, &created); err != nil {
		return nil, fmt.Errorf("creating the push subscription: %w", err)
	}
	if created.SigningSecret == "" {
		return nil, errors.New("the subscription came without a signing secret")
	}
	secret.Store(created.SigningSecret)

	np, _ := r.cfg.workers(PhasePush)
	pctx, g, cancel := r.phaseCtx(ctx)
	defer cancel()
	start := time.Now()
	startNs.Store(start.UnixNano())
	stop := r.progress(PhasePush, st, start)
	r.producers(pctx, g, st, queue, np, r.cfg.Count)
	g.wg.Wait()
	if g.err == nil {
		select {
		case <-done:
		case <-pctx.Done():
		}
	}
	stop()
	pr, err := r.finish(ctx, g, st, PhasePush, queue, start, &end, r.cfg.Count)
	if pr != nil {
		pr.PushBatches, pr.PushRefused = batches.Load(), refused.Load()
		pr.Requests = st.requests.Load()
	}
	return pr, err
}
