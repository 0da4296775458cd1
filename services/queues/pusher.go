package main

import (
	"context"
	"errors"
	"flag"
	"net"
	"net/http"
	"time"

	"github.com/queueshq/queues/pkg/adminhttp"
	"github.com/queueshq/queues/pkg/stack"
)

// runPusher runs one replica of the push fleet: it shares the subscriptions with the other
// replicas through leases in Redis and pushes their messages (SPEC §6).
func runPusher(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pusher", flag.ContinueOnError)
	var (
		be      backendFlags
		private = fs.Bool("allow-private", envBool("QUEUES_PUSH_ALLOW_PRIVATE"), "let endpoints be plain http, loopback or private (development; QUEUES_PUSH_ALLOW_PRIVATE)")
		listen  = fs.String("listen", env("QUEUES_PUSHER_LISTEN", "127.0.0.1:9091"), "address serving /metrics, /healthz and /debug/pprof (QUEUES_PUSHER_LISTEN)")
	)
	be.register(fs, "kid:base64secret,… the API's keys: pushed messages carry receipt handles (QUEUES_SIGNING_KEYS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := be.connect(ctx)
	if err != nil {
		return err
	}
	defer b.rdb.Close()
	log := b.log
	reg := adminhttp.NewRegistry()
	p, err := stack.NewPusher(stack.PusherOptions{Redis: b.rdb, Dynamo: b.ddb, Table: be.store.table, Keys: b.ring, Logger: log, AllowPrivate: *private, Registry: reg})
	if err != nil {
		return err
	}
	defer p.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	// The pusher's only listener is private, like the API's admin listener: metrics, pprof.
	srv := &http.Server{Handler: adminhttp.Handler(reg), ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	defer srv.Close()
	log.Info("pushing", "member", p.Member(), "metrics", "http://"+ln.Addr().String()+"/metrics", "allow_private", *private)
	return p.Run(ctx)
}
