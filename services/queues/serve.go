package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/queueshq/queues/pkg/adminhttp"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/services/queues/embedded"
)

// defineServe defines serve, which runs everything in one process on the embedded store
// (docs/architecture.md): the API, the sweeper and the pusher, with messages and metadata in
// bbolt files under the data directory.
// It needs no flags: the first start creates the directory, signing keys, a project "default"
// and an all-scopes token, which it prints and writes to <data-dir>/token; later starts reuse
// them. Being for development and single-node use, it lets push endpoints be plain http and
// loopback or private addresses unless QUEUES_PUSH_ALLOW_PRIVATE=false, and warns that it does.
func defineServe(fs *pflag.FlagSet) operatorRun {
	var c serveConfig
	c.register(fs)
	return func(ctx context.Context, _ []string) error { return c.run(ctx) }
}

// run starts the process with the configuration parsed.
func (c *serveConfig) run(ctx context.Context) error {
	start := time.Now()
	if err := c.Validate(); err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, "queues-serve")
	if err != nil {
		return err
	}
	defer stopTracing()
	log := logger(c.level)
	var ring *signingkeys.Ring
	if c.sigKeys != "" {
		var err error
		if ring, err = signingkeys.Parse(c.sigKeys); err != nil {
			return fmt.Errorf("QUEUES_SIGNING_KEYS: %w", err)
		}
	}
	dir, err := filepath.Abs(c.dataDir)
	if err != nil {
		return err
	}
	// Listen first: a taken port fails before the store is opened.
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	reg := adminhttp.NewRegistry()
	n, err := embedded.Open(ctx, embedded.Options{DataDir: dir, Keys: ring, OperatorToken: c.opToken, Rates: c.rates, Logger: log,
		DefaultLimits: c.tenancy.defaults, MeterEvery: c.tenancy.every, TrustedProxies: c.proxies.trusted,
		Streams:  c.streams.limits(),
		Registry: reg, Push: embedded.PushOptions{AllowPrivate: c.allowPrivate, PublicURL: c.publicURL, Grace: c.grace}})
	if err != nil {
		ln.Close()
		return err
	}
	defer n.Close()
	admin, err := adminhttp.Start(*c.adminAddr, c.adminChosen(), reg, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer admin.Close()
	url := fmt.Sprintf("http://%s", ln.Addr())
	state := "reusing"
	if n.Created {
		state = "created"
	}
	fmt.Printf("Queues (embedded) is running at %s\n", url)
	fmt.Printf("data     %s\n", dir)
	fmt.Printf("project  %s %s (%s)\n", n.Project.Name, n.Project.ID.Slug(ids.ProjectPrefix), state)
	fmt.Printf("token    %s\n", n.Token)
	fmt.Printf("         (also in %s)\n", filepath.Join(dir, embedded.TokenFile))
	if p, err := n.Auth.Verify(n.Token); err == nil {
		fmt.Printf("sqs      endpoint %s, access key %s, secret %s (docs/sqs.md)\n", url, p.TokenID.Slug(ids.TokenPrefix), n.Auth.SQSSecret(p.TokenID))
	}
	push := "in-process; endpoints must be public https (QUEUES_PUSH_ALLOW_PRIVATE=false)"
	if c.allowPrivate {
		push = "in-process; plain http and private endpoints allowed (development)"
	}
	fmt.Printf("push     %s\n", push)
	if a := admin.Addr(); a != "" {
		fmt.Printf("metrics  http://%s/metrics (admin listener)\n", a)
	}
	fmt.Printf("ready in %s\n", time.Since(start).Round(time.Millisecond))
	if c.allowPrivate {
		log.Warn("push endpoints may be plain http and loopback or private addresses (development and single-node use); " +
			"set QUEUES_PUSH_ALLOW_PRIVATE=false to allow public https endpoints only")
	}
	log.Info("serving the API and the pusher on the embedded store", "url", url, "dataDir", dir, "push_allow_private", c.allowPrivate)
	return embedded.Serve(ctx, ln, n, c.grace, log)
}
