package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/queueshq/queues/pkg/adminhttp"
	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/stack"
)

func runAPI(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	var (
		be      backendFlags
		rates   api.Rates
		listen  = fs.String("listen", env("QUEUES_LISTEN", "127.0.0.1:8080"), "address to serve HTTP on (QUEUES_LISTEN)")
		opTok   = fs.String("operator-token", env("QUEUES_OPERATOR_TOKEN", ""), "the operator credential (QUEUES_OPERATOR_TOKEN)")
		grace   = fs.Duration("shutdown-grace", 25*time.Second, "how long requests in progress may take to finish at shutdown")
		private = fs.Bool("push-allow-private", envBool("QUEUES_PUSH_ALLOW_PRIVATE"), "accept plain http and private push endpoints (development; QUEUES_PUSH_ALLOW_PRIVATE)")
		sendLim = fs.String("redis-send-limit", env("QUEUES_REDIS_SEND_LIMIT", redisengine.DefaultSendLimit),
			"Redis used_memory above which sends answer 503: a percentage of maxmemory, a byte count (\"800mb\") or \"off\" (QUEUES_REDIS_SEND_LIMIT)")
		syncRep = fs.Int("redis-sync-replicas", envInt("QUEUES_REDIS_SYNC_REPLICAS", 0), "answer a send only once this many Redis replicas hold it (WAIT; 0: do not wait; QUEUES_REDIS_SYNC_REPLICAS)")
	)
	adminAddr, adminExplicit := adminFlag(fs)
	be.register(fs, "kid:base64secret,… first signs, all verify (QUEUES_SIGNING_KEYS)")
	rateFlags(fs, &rates)
	limits, flushEvery := limitsFlag(fs), meterFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, "queues-api")
	if err != nil {
		return err
	}
	defer stopTracing()
	if _, err := redisengine.ParseSendLimit(*sendLim); err != nil {
		return fmt.Errorf("-redis-send-limit: %w", err)
	}
	defaults, err := limits()
	if err != nil {
		return err
	}
	every, err := flushEvery()
	if err != nil {
		return err
	}
	b, err := be.connect(ctx)
	if err != nil {
		return err
	}
	defer b.rdb.Close()
	log := b.log
	reg := adminhttp.NewRegistry()
	r, err := stack.New(ctx, stack.Options{Redis: b.rdb, Dynamo: b.ddb, Table: be.store.table, Keys: b.ring, OperatorToken: *opTok, Rates: rates, Logger: log, PushAllowPrivate: *private,
		Registry: reg, RedisSendLimit: *sendLim, DefaultLimits: defaults, MeterEvery: every, SyncReplicas: *syncRep})
	if err != nil {
		return err
	}
	defer r.Close()
	admin, err := adminhttp.Start(*adminAddr, adminExplicit(), reg, log)
	if err != nil {
		return err
	}
	defer admin.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	log.Info("serving the API", "url", fmt.Sprintf("http://%s", ln.Addr()))
	return stack.Serve(ctx, ln, r, *grace, log)
}

func runMigrate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	var st storeFlags
	st.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ddb, err := st.client(ctx)
	if err != nil {
		return err
	}
	if err := migrate(ctx, ddb, st.table); err != nil {
		return err
	}
	fmt.Printf("table %q is up to date\n", st.table)
	return nil
}
