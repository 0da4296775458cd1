package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/stack"
)

func runAPI(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	var (
		st      storeFlags
		rates   api.Rates
		listen  = fs.String("listen", env("QUEUES_LISTEN", "127.0.0.1:8080"), "address to serve HTTP on (QUEUES_LISTEN)")
		rurl    = fs.String("redis-url", env("QUEUES_REDIS_URL", "redis://127.0.0.1:6379"), "redis://host:port[/db]; comma-separated seeds with -redis-cluster (QUEUES_REDIS_URL)")
		cluster = fs.Bool("redis-cluster", envBool("QUEUES_REDIS_CLUSTER"), "the Redis URLs are Redis Cluster seeds (QUEUES_REDIS_CLUSTER)")
		opTok   = fs.String("operator-token", env("QUEUES_OPERATOR_TOKEN", ""), "the operator credential (QUEUES_OPERATOR_TOKEN)")
		sigKeys = fs.String("signing-keys", env("QUEUES_SIGNING_KEYS", ""), "kid:base64secret,… first signs, all verify (QUEUES_SIGNING_KEYS)")
		grace   = fs.Duration("shutdown-grace", 25*time.Second, "how long requests in progress may take to finish at shutdown")
		level   = fs.String("log-level", env("QUEUES_LOG_LEVEL", "info"), "debug, info, warn or error (QUEUES_LOG_LEVEL)")
		private = fs.Bool("push-allow-private", envBool("QUEUES_PUSH_ALLOW_PRIVATE"), "accept plain http and private push endpoints (development; QUEUES_PUSH_ALLOW_PRIVATE)")
	)
	st.register(fs)
	rateFlags(fs, &rates)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := logger(*level)
	ring, err := signingKeys(*sigKeys)
	if err != nil {
		return err
	}
	rdb, err := redisClient(*rurl, *cluster)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ddb, err := st.client(ctx)
	if err != nil {
		return err
	}
	r, err := stack.New(ctx, stack.Options{Redis: rdb, Dynamo: ddb, Table: st.table, Keys: ring, OperatorToken: *opTok, Rates: rates, Logger: log, PushAllowPrivate: *private})
	if err != nil {
		return err
	}
	defer r.Close()
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
