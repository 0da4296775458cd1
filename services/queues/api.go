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
		be      backendFlags
		rates   api.Rates
		listen  = fs.String("listen", env("QUEUES_LISTEN", "127.0.0.1:8080"), "address to serve HTTP on (QUEUES_LISTEN)")
		opTok   = fs.String("operator-token", env("QUEUES_OPERATOR_TOKEN", ""), "the operator credential (QUEUES_OPERATOR_TOKEN)")
		grace   = fs.Duration("shutdown-grace", 25*time.Second, "how long requests in progress may take to finish at shutdown")
		private = fs.Bool("push-allow-private", envBool("QUEUES_PUSH_ALLOW_PRIVATE"), "accept plain http and private push endpoints (development; QUEUES_PUSH_ALLOW_PRIVATE)")
		syncRep = fs.Int("redis-sync-replicas", envInt("QUEUES_REDIS_SYNC_REPLICAS", 0), "answer a send only once this many Redis replicas hold it (WAIT; 0: do not wait; QUEUES_REDIS_SYNC_REPLICAS)")
	)
	be.register(fs, "kid:base64secret,… first signs, all verify (QUEUES_SIGNING_KEYS)")
	rateFlags(fs, &rates)
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := be.connect(ctx)
	if err != nil {
		return err
	}
	defer b.rdb.Close()
	log := b.log
	r, err := stack.New(ctx, stack.Options{Redis: b.rdb, Dynamo: b.ddb, Table: be.store.table, Keys: b.ring, OperatorToken: *opTok, Rates: rates, Logger: log, PushAllowPrivate: *private,
		SyncReplicas: *syncRep})
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
