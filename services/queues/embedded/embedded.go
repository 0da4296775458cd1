// Package embedded wires embedded mode (`queues serve`) together the way package stack wires
// a production replica: the embedded engine and the embedded metadata store in one data
// directory, the metadata cache on an in-process bus, the in-process rate limiter, auth and
// receipt signing, the sweeper, the same api.Config, and a pusher (docs/push.md) in the same
// process. The serve command and the HTTP tests of embedded mode build it, so tests run what
// serve runs.
//
// The pusher is the fleet's pusher.Pusher with a pusher.Solo coordinator (one member, which
// holds every lease). It receives through the same engine as the API, reads subscriptions
// from the embedded store, and keeps its attempts log durably in meta.db (the newest
// meta.AttemptsKept per subscription). The API announces subscription changes to it by a
// direct call, so a pause or a new endpoint applies at once.
//
// The data directory holds:
//
//	messages.db     the engine's bbolt file (messages, in-flight state, dedup windows)
//	meta.db         the metadata store's bbolt file (projects, tokens, queues, push
//	                subscriptions and their attempts logs)
//	signing-keys    QUEUES_SIGNING_KEYS-format keys, generated on first start (mode 0600)
//	token           the default project's all-scopes token, written on first start (0600)
package embedded

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/queueshq/queues/pkg/pushauth"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/console"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/fanout"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/embeddedmeta"
	"github.com/queueshq/queues/pkg/metacache"
	"github.com/queueshq/queues/pkg/movetask"
	"github.com/queueshq/queues/pkg/queuemetrics"
	"github.com/queueshq/queues/pkg/ratelimit"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/sqs"
	"github.com/queueshq/queues/pkg/sweeper"
	"github.com/queueshq/queues/pkg/tenancy"
	"github.com/queueshq/queues/pusher"
)

// File names in the data directory.
const (
	MessagesFile = "messages.db"
	MetaFile     = "meta.db"
	KeysFile     = "signing-keys"
	TokenFile    = "token"
)

// ServeReceiveLoops is how many receive loops serve's pusher runs per subscription: with the
// engine in the same process a receive is a local write, and eight loops keep enough batches
// collecting for push to keep up with pull (docs/push.md has the figures).
const ServeReceiveLoops = 8

// DefaultProject is the project created on first start.
const DefaultProject = "default"

// Options configure an embedded node.
type Options struct {
	// DataDir holds every file (created if missing).
	DataDir string
	// Keys overrides the keys kept in the data directory (QUEUES_SIGNING_KEYS); nil: use the
	// kept ones, generating them on first start.
	Keys          *signingkeys.Ring
	OperatorToken string
	Rates         api.Rates // zero: api.DefaultRates
	Logger        *slog.Logger
	// SweepEvery is the sweeper's period (default sweeper.DefaultEvery; negative: no sweeper).
	SweepEvery time.Duration
	// CacheTTL bounds metadata staleness (default metacache.DefaultTTL).
	CacheTTL time.Duration
	// Registry receives the API's and the pusher's metrics, which the caller serves on the
	// admin listener (pkg/adminhttp; nil: a new registry, not served).
	Registry *prometheus.Registry
	// Push configures the in-process pusher.
	Push PushOptions
	// DefaultLimits are the project limits of projects without their own (zero:
	// tenancy.Defaults; QUEUES_DEFAULT_LIMITS).
	DefaultLimits tenancy.Limits
	// TrustedProxies are the proxies whose X-Forwarded-For names a request's source
	// (QUEUES_TRUSTED_PROXIES).
	TrustedProxies api.TrustedProxies
	// MeterEvery is how often the usage meter flushes (default tenancy.FlushEvery).
	MeterEvery time.Duration
	// BacklogTopN is how many of the busiest queues get labelled backlog and push-health
	// metrics (package queuemetrics; 0: queuemetrics.DefaultTopN, negative: no backlog sampling).
	BacklogTopN int
	// Clock is the node's clock (nil: the wall clock). Tests inject one they can move, to see
	// what hours or days of delay do without waiting for them.
	Clock clock.Clock
	// Streams cap the node's receive streams and bound their idleness (zero fields: the
	// defaults; QUEUES_STREAM_MAX_PER_PROJECT, QUEUES_STREAM_MAX_PER_REPLICA).
	Streams api.StreamLimits
}

// PushOptions configure the in-process pusher.
type PushOptions struct {
	// AllowPrivate accepts plain http and loopback, private or link-local push endpoints, in
	// the API's validation and in the pusher's connections (QUEUES_PUSH_ALLOW_PRIVATE; serve
	// turns it on by default, with a warning).
	AllowPrivate bool
	// PublicURL is the service's public URL, the iss of push tokens (QUEUES_PUBLIC_URL; empty:
	// auth type "oidc" is refused).
	PublicURL string
	// RootCAs, when set, are the CAs trusted for https endpoints (default: the system's).
	RootCAs *x509.CertPool
	// Grace bounds how long Close waits for pushes in progress (default pusher.DefaultGrace).
	Grace time.Duration
	// Refresh is how often the pusher re-reads the subscription list (default
	// pusher.DefaultRefresh); changes made through the API apply at once anyway.
	Refresh time.Duration
	// OnApplied and OnAttempt are the pusher's hooks (tests wait on them instead of
	// sleeping): a subscription version applied; an attempt settled and logged.
	OnApplied func(meta.Subscription)
	OnAttempt func(queue ids.ID, a meta.Attempt)
}

// Node is one embedded-mode process's worth of state.
type Node struct {
	API    *api.Server
	Engine *embeddedengine.Engine
	Store  *embeddedmeta.Store
	Meta   *metacache.Cache
	Auth   *auth.Authority
	// Topics keeps topics and bindings: Store itself, named for the API and the fan-out.
	Topics meta.TopicStore
	// Meter counts use per project and hour (flushed to the store).
	Meter *tenancy.Meter
	// Pusher pushes every subscription's messages; Attempts is its attempts log.
	Pusher   *pusher.Pusher
	Attempts meta.AttemptLog
	// Fanout copies topics' log entries into their bound queues.
	Fanout *fanout.Runner
	// Project is the default project; Token its all-scopes token (from <data-dir>/token).
	Project meta.Project
	Token   string
	// Created is true when this start created the default project and token.
	Created bool

	draining chan struct{}
	drain    sync.Once
	stop     context.CancelFunc
	done     chan struct{}
	stopPush context.CancelFunc
	pushDone chan struct{}
	closed   sync.Once
}

// Open opens (or initialises) the data directory and builds the node.
func Open(ctx context.Context, o Options) (n *Node, err error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.DataDir == "" {
		return nil, errors.New("embedded: no data directory")
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, err
	}
	ring := o.Keys
	if ring == nil {
		if ring, err = loadOrCreateKeys(filepath.Join(o.DataDir, KeysFile)); err != nil {
			return nil, err
		}
	}
	var clk clock.Clock = clock.Real{}
	if o.Clock != nil {
		clk = o.Clock
	}
	eng, err := embeddedengine.Open(filepath.Join(o.DataDir, MessagesFile), clk, embeddedengine.Options{Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	store, err := embeddedmeta.Open(filepath.Join(o.DataDir, MetaFile))
	if err != nil {
		eng.Close()
		return nil, err
	}
	cache := metacache.New(store, &metacache.LocalBus{}, clk, o.CacheTTL)
	authority := auth.New(ring, o.OperatorToken, clk.Now)
	n = &Node{Engine: eng, Store: store, Meta: cache, Auth: authority, Attempts: embeddedmeta.NewAttemptLog(store), Topics: store,
		draining: make(chan struct{}), done: make(chan struct{}), pushDone: make(chan struct{})}
	defer func() {
		if err != nil {
			cache.Close()
			store.Close()
			eng.Close()
		}
	}()
	if err := n.bootstrap(ctx, filepath.Join(o.DataDir, TokenFile)); err != nil {
		return nil, err
	}
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	mover, err := n.wire(o, clk, ring, reg)
	if err != nil {
		return nil, err
	}
	n.start(o, clk, mover, reg)
	return n, nil
}

// wire builds the node's pusher, API (with the console and the SQS door), move runner and
// topic fan-out over its engine and stores.
func (n *Node) wire(o Options, clk clock.Clock, ring *signingkeys.Ring, reg *prometheus.Registry) (*movetask.Runner, error) {
	eng, store, cache, authority := n.Engine, n.Store, n.Meta, n.Auth
	signer := receipt.NewSigner(ring)
	gens := &pusher.LocalGenerations{}
	health := embeddedmeta.NewHealthLog(store)
	n.Meter = tenancy.NewMeter(clk, "")
	tokens := pushauth.ForURL(store, clk, o.Push.PublicURL)
	var err error
	n.Pusher, err = pusher.New(pusher.Config{
		Tokens: tokens,
		Usage:  n.Meter,
		Engine: eng, Store: store, Receipts: signer, Coordinator: pusher.NewSolo(), Attempts: n.Attempts, Generation: gens.Get, Health: health,
		AllowPrivate: o.Push.AllowPrivate, RootCAs: o.Push.RootCAs, Clock: clk, Logger: o.Logger.With("component", "pusher"),
		Registry: reg, Member: "serve", Refresh: o.Push.Refresh, Grace: o.Push.Grace, OnAttempt: o.Push.OnAttempt,
		// The engine is in this process: more receive loops keep more batches collecting
		// (docs/push.md).
		ReceiveLoops: ServeReceiveLoops,
	})
	if err != nil {
		return nil, err
	}
	n.Pusher.OnApplied = o.Push.OnApplied
	stored := eng // the engine keeps each project's stored bytes
	mover := &movetask.Runner{Store: store, Queues: cache, Engine: eng, Clock: clk, Log: o.Logger.With("component", "movetask")}
	topics := cache.Topics(store)
	n.Fanout = &fanout.Runner{Engine: eng, Topics: topics, Queues: cache, Bindings: store, Meter: n.Meter, Clock: clk,
		Log: o.Logger.With("component", "fanout"), Registry: reg}
	n.API = api.New(api.Config{
		MoveTasks: store, MoveRunner: mover, Streams: o.Streams,
		Topics: topics, TopicEngine: fanout.Notifying(eng, n.Fanout), // a publish wakes the fan-out at once
		Tenancy: store, DefaultLimits: o.DefaultLimits, Meter: n.Meter, StoredBytes: stored,
		Parking: tenancy.NewLocalParking(),
		Engine:  eng, Meta: cache, Auth: authority, Receipts: signer,
		Limiter: ratelimit.NewLocal(), Rates: o.Rates, Clock: clk, Logger: o.Logger,
		Registry: reg, Draining: n.draining,
		Subscriptions: store, Attempts: n.Attempts, Health: health, PushAllowPrivate: o.Push.AllowPrivate, PushTokens: tokens,
		TrustedProxies: o.TrustedProxies,
		PushChanged:    func(_ context.Context, queue ids.ID) { gens.Bump(queue); n.Pusher.Changed(queue) },
		Dependencies: []api.Dependency{
			{Name: "messages", Check: func(context.Context) error { return eng.Err() }},
			{Name: "metadata", Check: store.Ping},
		},
	})
	mover.Budget = n.API    // a task's batches spend its project's request and byte budgets
	n.Fanout.Limits = n.API // copies are bounded by the project's maxStoredBytes, as sends are
	// Replayed copies are sends: bounded by maxStoredBytes, metered.
	mover.Replays = &movetask.ReplaySource{Engine: eng, Topics: topics, Limits: n.API, Meter: n.Meter}
	console.Mount(n.API.Echo())
	sqs.New(sqs.Config{Backend: n.API.Service, Auth: authority, Clock: clk, Logger: o.Logger, MoveTasks: n.API}).Mount(n.API.Echo())
	return mover, nil
}

// start runs the node's background work: move tasks, topic fan-out, usage metering and
// sampling, the backlog sampler, the sweeper and the pusher; Close stops them.
func (n *Node) start(o Options, clk clock.Clock, mover *movetask.Runner, reg *prometheus.Registry) {
	eng, store := n.Engine, n.Store
	stored := eng
	bg, stop := context.WithCancel(context.Background())
	n.stop = stop
	var sampler *queuemetrics.Sampler
	if o.BacklogTopN >= 0 {
		sampler = queuemetrics.New(queuemetrics.Config{Meta: store, Subscriptions: store, Attempts: n.Attempts, Engine: eng,
			Clock: clk, Logger: o.Logger, TopN: o.BacklogTopN})
		reg.MustRegister(sampler)
	}
	go func() {
		defer close(n.done)
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Add(4)
		go func() { defer wg.Done(); mover.Run(bg) }()
		go func() { defer wg.Done(); n.Fanout.Run(bg) }()
		go func() { defer wg.Done(); n.Meter.Run(bg, store, o.MeterEvery, o.Logger) }()
		go func() { defer wg.Done(); tenancy.RunSampler(bg, clk, store, stored, o.Logger) }()
		if sampler != nil {
			sampled := make(chan struct{})
			go func() { defer close(sampled); sampler.Run(bg) }()
			defer func() { <-sampled }()
		}
		if o.SweepEvery >= 0 {
			sweeper.Run(bg, store, eng, o.SweepEvery, o.Logger)
		}
	}()
	pctx, stopPush := context.WithCancel(context.Background())
	n.stopPush = stopPush
	go func() {
		defer close(n.pushDone)
		if err := n.Pusher.Run(pctx); err != nil {
			o.Logger.Error("the pusher stopped", "err", err)
		}
	}()
}

// loadOrCreateKeys reads the kept signing keys, or generates and keeps them (mode 0600).
func loadOrCreateKeys(path string) (*signingkeys.Ring, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		r, perr := signingkeys.Parse(strings.TrimSpace(string(b)))
		if perr != nil {
			return nil, fmt.Errorf("embedded: %s: %w", path, perr)
		}
		return r, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	r, err := signingkeys.Generate("k" + time.Now().UTC().Format("20060102"))
	if err != nil {
		return nil, err
	}
	if err := writeFileSync(path, []byte(r.String()+"\n")); err != nil {
		return nil, err
	}
	return r, nil
}

// writeFileSync writes a file atomically (temporary file, fsync, rename, fsync of the
// directory) with mode 0600.
func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// bootstrap finds the default project and its token, creating both on first start. The token
// file is written last: its presence means the project and token records are in the store.
func (n *Node) bootstrap(ctx context.Context, tokenPath string) error {
	b, err := os.ReadFile(tokenPath)
	switch {
	case err == nil:
		tok := strings.TrimSpace(string(b))
		p, verr := n.Auth.Verify(tok)
		if verr != nil {
			return fmt.Errorf("embedded: the token in %s does not verify with the signing keys (%v); "+
				"remove the file to issue a new one", tokenPath, verr)
		}
		proj, gerr := n.Meta.GetProject(ctx, p.ProjectID)
		if gerr != nil {
			return fmt.Errorf("embedded: the project of the token in %s: %w", tokenPath, gerr)
		}
		n.Project, n.Token = proj, tok
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	proj, err := n.defaultProject(ctx, now)
	if err != nil {
		return err
	}
	t := meta.Token{ID: ids.New(), ProjectID: proj.ID, Name: "default", Scopes: []string{auth.ScopeAll}, CreatedAt: now}
	tok, err := n.Auth.Issue(proj.ID, t.ID, t.Scopes, now, nil)
	if err != nil {
		return err
	}
	if err := n.Meta.CreateToken(ctx, t); err != nil {
		return err
	}
	if err := writeFileSync(tokenPath, []byte(tok+"\n")); err != nil {
		return err
	}
	n.Project, n.Token, n.Created = proj, tok, true
	return nil
}

// defaultProject returns the project named "default", creating it if there is none (a start
// that crashed before writing the token file left one behind).
func (n *Node) defaultProject(ctx context.Context, now time.Time) (meta.Project, error) {
	cursor := ""
	for {
		ps, next, err := n.Meta.ListProjects(ctx, meta.Page{Limit: 1000, Cursor: cursor})
		if err != nil {
			return meta.Project{}, err
		}
		for _, p := range ps {
			if p.Name == DefaultProject {
				return p, nil
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	p := meta.Project{ID: ids.New(), Name: DefaultProject, CreatedAt: now}
	return p, n.Meta.CreateProject(ctx, p)
}

// Handler is the node's HTTP handler.
func (n *Node) Handler() http.Handler { return n.API.Handler() }

// Drain makes waiting receives answer now (the first step of a graceful shutdown).
func (n *Node) Drain() { n.drain.Do(func() { close(n.draining) }) }

// Close stops background work and closes both files. The pusher stops first, gracefully:
// it receives no more, and pushes in progress finish and settle (up to PushOptions.Grace).
func (n *Node) Close() error {
	var err error
	n.closed.Do(func() {
		n.Drain()
		n.stopPush()
		<-n.pushDone
		n.stop()
		<-n.done
		n.Meta.Close()
		err = errors.Join(n.Engine.Close(), n.Store.Close())
	})
	return err
}

// Serve serves the node on ln until ctx ends, then shuts down gracefully (see api.Serve).
func Serve(ctx context.Context, ln net.Listener, n *Node, grace time.Duration, log *slog.Logger) error {
	return api.Serve(ctx, ln, n, grace, log)
}
