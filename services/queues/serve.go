package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/queueshq/queues/pkg/adminhttp"
	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/embedded"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/keys"
)

// runServe runs everything in one process on the embedded store (SPEC §1, §9): the API, the
// sweeper and the pusher, with messages and metadata in bbolt files under the data directory.
// It needs no flags: the first start creates the directory, signing keys, a project "default"
// and an all-scopes token, which it prints and writes to <data-dir>/token; later starts reuse
// them. Being for development and single-node use, it lets push endpoints be plain http and
// loopback or private addresses unless QUEUES_PUSH_ALLOW_PRIVATE=false, and warns that it does.
func runServe(ctx context.Context, args []string) error {
	start := time.Now()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var (
		rates   api.Rates
		dataDir = fs.String("data-dir", env("QUEUES_DATA_DIR", ".queues"), "directory of the embedded store, keys and token (QUEUES_DATA_DIR)")
		listen  = fs.String("listen", env("QUEUES_LISTEN", "127.0.0.1:8080"), "address to serve HTTP on (QUEUES_LISTEN)")
		opTok   = fs.String("operator-token", env("QUEUES_OPERATOR_TOKEN", ""), "the operator credential (QUEUES_OPERATOR_TOKEN); empty: no operator routes")
		sigKeys = fs.String("signing-keys", env("QUEUES_SIGNING_KEYS", ""), "kid:base64secret,… overriding the keys kept in the data directory (QUEUES_SIGNING_KEYS)")
		grace   = fs.Duration("shutdown-grace", 25*time.Second, "how long requests in progress may take to finish at shutdown")
		level   = fs.String("log-level", env("QUEUES_LOG_LEVEL", "info"), "debug, info, warn or error (QUEUES_LOG_LEVEL)")
		private = fs.Bool("push-allow-private", true, "let push endpoints be plain http, loopback or private addresses (QUEUES_PUSH_ALLOW_PRIVATE; default true in serve)")
	)
	adminAddr, adminExplicit := adminFlag(fs)
	if v, ok := os.LookupEnv("QUEUES_PUSH_ALLOW_PRIVATE"); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("QUEUES_PUSH_ALLOW_PRIVATE=%q: want true or false", v)
		}
		*private = b
	}
	rateFlags(fs, &rates)
	limits, flushEvery := limitsFlag(fs), meterFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, "queues-serve")
	if err != nil {
		return err
	}
	defer stopTracing()
	defaults, err := limits()
	if err != nil {
		return err
	}
	every, err := flushEvery()
	if err != nil {
		return err
	}
	log := logger(*level)
	var ring *keys.Ring
	if *sigKeys != "" {
		var err error
		if ring, err = keys.Parse(*sigKeys); err != nil {
			return fmt.Errorf("QUEUES_SIGNING_KEYS: %w", err)
		}
	}
	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		return err
	}
	// Listen first: a taken port fails before the store is opened.
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	reg := adminhttp.NewRegistry()
	n, err := embedded.Open(ctx, embedded.Options{DataDir: dir, Keys: ring, OperatorToken: *opTok, Rates: rates, Logger: log,
		DefaultLimits: defaults, MeterEvery: every,
		Registry: reg, Push: embedded.PushOptions{AllowPrivate: *private, Grace: *grace}})
	if err != nil {
		ln.Close()
		return err
	}
	defer n.Close()
	admin, err := adminhttp.Start(*adminAddr, adminExplicit(), reg, log)
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
	if *private {
		push = "in-process; plain http and private endpoints allowed (development)"
	}
	fmt.Printf("push     %s\n", push)
	if a := admin.Addr(); a != "" {
		fmt.Printf("metrics  http://%s/metrics (admin listener)\n", a)
	}
	fmt.Printf("ready in %s\n", time.Since(start).Round(time.Millisecond))
	if *private {
		log.Warn("push endpoints may be plain http and loopback or private addresses (development and single-node use); " +
			"set QUEUES_PUSH_ALLOW_PRIVATE=false to allow public https endpoints only")
	}
	log.Info("serving the API and the pusher on the embedded store", "url", url, "dataDir", dir, "push_allow_private", *private)
	return embedded.Serve(ctx, ln, n, *grace, log)
}
