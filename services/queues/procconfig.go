package main

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/pflag"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/movetask"
	"github.com/queueshq/queues/pkg/queuemetrics"
	"github.com/queueshq/queues/pusher"
)

// One configuration type per process (api, serve, pusher): register defines its flags (a
// flag's default is the one default, shown by -help; a QUEUES_* variable bound with bindEnv
// or read by env overrides it; the command line overrides both), Validate checks and parses
// what the flag parser cannot, naming the variable. The defaults the processes share are here.
const (
	defaultListen   = "127.0.0.1:8080"
	defaultGrace    = 25 * time.Second
	defaultLogLevel = "info"
)

// graceUsage is -shutdown-grace's help, the same in api and serve.
const graceUsage = "how long requests in progress may take to finish at shutdown"

// apiConfig is the configuration of queues api.
type apiConfig struct {
	backend      backendFlags
	rates        api.Rates
	tenancy      tenancyFlags
	proxies      proxyFlags
	listen       string
	opToken      string
	grace        time.Duration
	allowPrivate bool
	sendLimit    string
	moveLease    time.Duration
	syncReplicas int
	streams      streamFlags
	adminAddr    *string
	adminChosen  func() bool
	publicURL    string
}

func (c *apiConfig) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.publicURL, "public-url", env("QUEUES_PUBLIC_URL", ""), "the service's URL as push receivers reach it: the iss of push tokens, keys at <url>/.well-known/jwks.json; empty: no push tokens (QUEUES_PUBLIC_URL)")
	fs.StringVar(&c.listen, "listen", env("QUEUES_LISTEN", defaultListen), "address to serve HTTP on (QUEUES_LISTEN)")
	fs.StringVar(&c.opToken, "operator-token", env("QUEUES_OPERATOR_TOKEN", ""), "the operator credential (QUEUES_OPERATOR_TOKEN)")
	fs.DurationVar(&c.grace, "shutdown-grace", defaultGrace, graceUsage)
	fs.BoolVar(&c.allowPrivate, "push-allow-private", false, "accept plain http and private push endpoints (development; QUEUES_PUSH_ALLOW_PRIVATE)")
	fs.StringVar(&c.sendLimit, "redis-send-limit", env("QUEUES_REDIS_SEND_LIMIT", redisengine.DefaultSendLimit),
		"Redis used_memory above which sends answer 503: a percentage of maxmemory, a byte count (\"800mb\") or \"off\" (QUEUES_REDIS_SEND_LIMIT)")
	fs.DurationVar(&c.moveLease, "move-lease", movetask.DefaultLease, "how long a replica holds a move task between checkpoints; another resumes it once lapsed (QUEUES_MOVE_LEASE)")
	fs.IntVar(&c.syncReplicas, "redis-sync-replicas", 0, "answer a send only once this many Redis replicas hold it (WAIT; 0: do not wait; QUEUES_REDIS_SYNC_REPLICAS)")
	c.adminAddr, c.adminChosen = adminFlag(fs)
	c.backend.register(fs, "kid:base64secret,… first signs, all verify (QUEUES_SIGNING_KEYS)")
	rateFlags(fs, &c.rates)
	c.tenancy.register(fs)
	c.proxies.register(fs)
	bindEnv(fs, "push-allow-private", "QUEUES_PUSH_ALLOW_PRIVATE")
	bindEnv(fs, "redis-sync-replicas", "QUEUES_REDIS_SYNC_REPLICAS")
	bindEnv(fs, "move-lease", "QUEUES_MOVE_LEASE")
	c.streams.register(fs)
}

// Validate checks what the flag types do not: the send limit's form, the tenancy settings
// and the bounds of the counts.
func (c *apiConfig) Validate() error {
	if err := validPublicURL(c.publicURL); err != nil {
		return err
	}
	if _, err := redisengine.ParseSendLimit(c.sendLimit); err != nil {
		return fmt.Errorf("-redis-send-limit: %w", err)
	}
	if c.syncReplicas < 0 {
		return errors.New("QUEUES_REDIS_SYNC_REPLICAS (-redis-sync-replicas): must be 0 or more")
	}
	if err := c.proxies.validate(); err != nil {
		return err
	}
	if err := c.streams.validate(); err != nil {
		return err
	}
	return c.tenancy.validate()
}

// serveConfig is the configuration of queues serve.
type serveConfig struct {
	rates        api.Rates
	tenancy      tenancyFlags
	proxies      proxyFlags
	dataDir      string
	listen       string
	opToken      string
	sigKeys      string
	grace        time.Duration
	level        string
	allowPrivate bool
	streams      streamFlags
	adminAddr    *string
	adminChosen  func() bool
	publicURL    string
}

func (c *serveConfig) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.publicURL, "public-url", env("QUEUES_PUBLIC_URL", ""), "the service's URL as push receivers reach it: the iss of push tokens, keys at <url>/.well-known/jwks.json; empty: no push tokens (QUEUES_PUBLIC_URL)")
	fs.StringVar(&c.dataDir, "data-dir", env("QUEUES_DATA_DIR", ".queues"), "directory of the embedded store, keys and token (QUEUES_DATA_DIR)")
	fs.StringVar(&c.listen, "listen", env("QUEUES_LISTEN", defaultListen), "address to serve HTTP on (QUEUES_LISTEN)")
	fs.StringVar(&c.opToken, "operator-token", env("QUEUES_OPERATOR_TOKEN", ""), "the operator credential (QUEUES_OPERATOR_TOKEN); empty: no operator routes")
	fs.StringVar(&c.sigKeys, "signing-keys", env("QUEUES_SIGNING_KEYS", ""), "kid:base64secret,… overriding the keys kept in the data directory (QUEUES_SIGNING_KEYS)")
	fs.DurationVar(&c.grace, "shutdown-grace", defaultGrace, graceUsage)
	fs.StringVar(&c.level, "log-level", env("QUEUES_LOG_LEVEL", defaultLogLevel), "debug, info, warn or error (QUEUES_LOG_LEVEL)")
	fs.BoolVar(&c.allowPrivate, "push-allow-private", true, "let push endpoints be plain http, loopback or private addresses (QUEUES_PUSH_ALLOW_PRIVATE; default true in serve)")
	c.adminAddr, c.adminChosen = adminFlag(fs)
	bindEnv(fs, "push-allow-private", "QUEUES_PUSH_ALLOW_PRIVATE")
	rateFlags(fs, &c.rates)
	c.tenancy.register(fs)
	c.proxies.register(fs)
	c.streams.register(fs)
}

// Validate checks the tenancy settings, the trusted proxies and the stream caps.
func (c *serveConfig) Validate() error {
	if err := validPublicURL(c.publicURL); err != nil {
		return err
	}
	if err := c.proxies.validate(); err != nil {
		return err
	}
	if err := c.streams.validate(); err != nil {
		return err
	}
	return c.tenancy.validate()
}

// pusherConfig is the configuration of queues pusher.
type pusherConfig struct {
	backend      backendFlags
	allowPrivate bool
	listen       string
	backlogTop   int
	maxInFlight  int
	publicURL    string
}

func (c *pusherConfig) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.publicURL, "public-url", env("QUEUES_PUBLIC_URL", ""), "the service's URL as push receivers reach it: the iss of push tokens, keys at <url>/.well-known/jwks.json; empty: no push tokens (QUEUES_PUBLIC_URL)")
	fs.BoolVar(&c.allowPrivate, "allow-private", false, "let endpoints be plain http, loopback or private (development; QUEUES_PUSH_ALLOW_PRIVATE)")
	fs.StringVar(&c.listen, "listen", env("QUEUES_PUSHER_LISTEN", "127.0.0.1:9091"), "address serving /metrics, /healthz, /readyz and /debug/pprof (QUEUES_PUSHER_LISTEN)")
	fs.IntVar(&c.backlogTop, "backlog-top", queuemetrics.DefaultTopN, "busiest queues with labelled backlog and push-health metrics; 0: no backlog sampling (QUEUES_BACKLOG_TOP)")
	c.backend.register(fs, "kid:base64secret,… the API's keys: pushed messages carry receipt handles (QUEUES_SIGNING_KEYS)")
	fs.IntVar(&c.maxInFlight, "max-in-flight", pusher.DefaultMaxInFlight, "push batches in flight on this replica across all subscriptions, shared fairly between projects and their subscriptions (QUEUES_PUSH_MAX_IN_FLIGHT)")
	bindEnv(fs, "allow-private", "QUEUES_PUSH_ALLOW_PRIVATE")
	bindEnv(fs, "backlog-top", "QUEUES_BACKLOG_TOP")
	bindEnv(fs, "max-in-flight", "QUEUES_PUSH_MAX_IN_FLIGHT")
}

// Validate checks the bounds of the counts (-max-in-flight 0 means the default).
func (c *pusherConfig) Validate() error {
	if err := validPublicURL(c.publicURL); err != nil {
		return err
	}
	if c.backlogTop < 0 {
		return errors.New("QUEUES_BACKLOG_TOP (-backlog-top): must be 0 or more")
	}
	if c.maxInFlight < 0 {
		return errors.New("QUEUES_PUSH_MAX_IN_FLIGHT (-max-in-flight): must be 0 (the default) or more")
	}
	return nil
}

// validPublicURL checks QUEUES_PUBLIC_URL: empty, or an absolute http(s) URL without query
// or fragment (it becomes the iss of push tokens, which receivers compare byte for byte).
func validPublicURL(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("QUEUES_PUBLIC_URL (-public-url): %q is not an absolute http(s) URL without query", v)
	}
	return nil
}
