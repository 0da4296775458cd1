package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/embedded"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/keys"
)

// runServe runs everything in one process on the embedded store (SPEC §1, §9): the API, the
// sweeper and (once it exists) the pusher, with messages and metadata in bbolt files under the
// data directory. It needs no flags: the first start creates the directory, signing keys, a
// project "default" and an all-scopes token, which it prints and writes to <data-dir>/token;
// later starts reuse them.
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
	)
	rateFlags(fs, &rates)
	if err := fs.Parse(args); err != nil {
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
	n, err := embedded.Open(ctx, embedded.Options{DataDir: dir, Keys: ring, OperatorToken: *opTok, Rates: rates, Logger: log})
	if err != nil {
		ln.Close()
		return err
	}
	defer n.Close()
	// The pusher is started here, in-process, once it exists (issue 5); until then push
	// subscriptions are not delivered by serve.
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
	fmt.Printf("ready in %s\n", time.Since(start).Round(time.Millisecond))
	log.Info("serving the API on the embedded store", "url", url, "dataDir", dir)
	return embedded.Serve(ctx, ln, n, *grace, log)
}
