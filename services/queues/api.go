package main

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/pflag"

	"github.com/queueshq/queues/pkg/adminhttp"
	"github.com/queueshq/queues/services/queues/stack"
)

// defineAPI defines api, one replica of the API tier on Redis and DynamoDB.
func defineAPI(fs *pflag.FlagSet) operatorRun {
	var c apiConfig
	c.register(fs)
	return func(ctx context.Context, _ []string) error { return c.run(ctx) }
}

// run starts the process with the configuration parsed.
func (c *apiConfig) run(ctx context.Context) error {
	if err := c.Validate(); err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, "queues-api")
	if err != nil {
		return err
	}
	defer stopTracing()
	be := &c.backend
	b, err := be.connect(ctx)
	if err != nil {
		return err
	}
	defer b.rdb.Close()
	log := b.log
	reg := adminhttp.NewRegistry()
	r, err := stack.New(ctx, stack.Options{Redis: b.rdb, Dynamo: b.ddb, Table: be.store.table, Keys: b.ring, OperatorToken: c.opToken, Rates: c.rates, Logger: log, PushAllowPrivate: c.allowPrivate, PublicURL: c.publicURL,
		Registry: reg, RedisSendLimit: c.sendLimit, DefaultLimits: c.tenancy.defaults, MeterEvery: c.tenancy.every, SyncReplicas: c.syncReplicas, MoveLease: c.moveLease,
		TrustedProxies: c.proxies.trusted,
		Streams:        c.streams.limits()})
	if err != nil {
		return err
	}
	defer r.Close()
	admin, err := adminhttp.Start(*c.adminAddr, c.adminChosen(), reg, log)
	if err != nil {
		return err
	}
	defer admin.Close()
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	log.Info("serving the API", "url", fmt.Sprintf("http://%s", ln.Addr()))
	return stack.Serve(ctx, ln, r, c.grace, log)
}

// defineMigrate defines migrate, which creates or updates the DynamoDB table.
func defineMigrate(fs *pflag.FlagSet) operatorRun {
	var st storeFlags
	st.register(fs)
	return func(ctx context.Context, _ []string) error { return st.migrate(ctx) }
}

func (st *storeFlags) migrate(ctx context.Context) error {
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
