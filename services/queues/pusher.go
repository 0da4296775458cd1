package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/queueshq/queues/pkg/adminhttp"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/meta/pushlog"
	"github.com/queueshq/queues/pkg/queuemetrics"
	"github.com/queueshq/queues/services/queues/stack"
)

// definePusher defines pusher, one replica of the push fleet: it shares the subscriptions
// with the other replicas through leases in Redis and pushes their messages (docs/push.md).
func definePusher(fs *pflag.FlagSet) operatorRun {
	var c pusherConfig
	c.register(fs)
	return func(ctx context.Context, _ []string) error { return c.run(ctx) }
}

// run starts the process with the configuration parsed.
func (c *pusherConfig) run(ctx context.Context) error {
	if err := c.Validate(); err != nil {
		return err
	}
	be := &c.backend
	stopTracing, err := startTracing(ctx, "queues-pusher")
	if err != nil {
		return err
	}
	defer stopTracing()
	b, err := be.connect(ctx)
	if err != nil {
		return err
	}
	defer b.rdb.Close()
	log := b.log
	reg := adminhttp.NewRegistry()
	p, err := stack.NewPusher(stack.PusherOptions{Redis: b.rdb, Dynamo: b.ddb, Table: be.store.table, Keys: b.ring, Logger: log, AllowPrivate: c.allowPrivate, PublicURL: c.publicURL, Registry: reg, MaxInFlight: c.maxInFlight})
	if err != nil {
		return err
	}
	defer p.Close()
	store := dynamometa.New(b.ddb, be.store.table)
	if c.backlogTop > 0 {
		// The pusher fleet samples the backlog for the operator (package queuemetrics): it is the
		// tier with the engine, the subscriptions and the attempts log at hand.
		sampler := queuemetrics.New(queuemetrics.Config{Meta: store, Subscriptions: store, Attempts: pushlog.NewAttempts(b.rdb),
			Engine: p.Engine, Logger: log, TopN: c.backlogTop})
		reg.MustRegister(sampler)
		sctx, stopSampling := context.WithCancel(ctx)
		sampled := make(chan struct{})
		go func() { defer close(sampled); sampler.Run(sctx) }()
		// Before the engine closes (deferred above, so run after this).
		defer func() { stopSampling(); <-sampled }()
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	handler := pusherHandler(reg, map[string]func(context.Context) error{
		"redis":    func(ctx context.Context) error { return b.rdb.Ping(ctx).Err() },
		"metadata": store.Ping,
	})
	// The pusher's only listener is private, like the API's admin listener.
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	defer srv.Close()
	log.Info("pushing", "member", p.Member(), "metrics", "http://"+ln.Addr().String()+"/metrics", "allow_private", c.allowPrivate)
	return p.Run(ctx)
}

// pusherHandler serves the pusher's /healthz (the process serves), /readyz (every dependency
// answers; a failing one is named, never its address or error text) and /metrics.
func pusherHandler(reg prometheus.Gatherer, deps map[string]func(context.Context) error) http.Handler {
	names := make([]string, 0, len(deps))
	for n := range deps {
		names = append(names, n)
	}
	sort.Strings(names)
	mux := http.NewServeMux()
	mux.Handle("/", adminhttp.Handler(reg)) // /metrics, /healthz, /debug/pprof/
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		var failing []string
		for _, n := range names {
			if deps[n](ctx) != nil {
				failing = append(failing, n)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if len(failing) > 0 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
				"code": "unavailable", "message": "not ready: " + strings.Join(failing, ", ") + " unreachable",
				"details": map[string]any{"failing": failing}}})
			return
		}
		_, _ = w.Write([]byte(`{"status":"ready"}`))
	})
	return mux
}
