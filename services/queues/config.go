package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/queueshq/queues/pkg/adminhttp"
	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/telemetry"
	"github.com/queueshq/queues/pkg/tenancy"
)

// env returns the environment variable or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// storeFlags are the DynamoDB settings shared by api, migrate and admin.
type storeFlags struct {
	endpoint, table string
}

func (s *storeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.endpoint, "dynamodb-endpoint", env("QUEUES_DYNAMODB_ENDPOINT", ""), "DynamoDB endpoint URL; empty: AWS's, from the AWS_* settings (QUEUES_DYNAMODB_ENDPOINT)")
	fs.StringVar(&s.table, "dynamodb-table", env("QUEUES_DYNAMODB_TABLE", "queues"), "DynamoDB table name (QUEUES_DYNAMODB_TABLE)")
}

// client builds a DynamoDB client with bounded retries and timeouts, so an unreachable
// DynamoDB answers 503 instead of hanging requests.
func (s *storeFlags) client(ctx context.Context) (*dynamodb.Client, error) {
	opts := []func(*config.LoadOptions) error{
		// A buildable client (not a plain http.Client) so AWS_CA_BUNDLE and the like still apply.
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(5 * time.Second)),
		config.WithRetryer(func() aws.Retryer { return retry.AddWithMaxAttempts(retry.NewStandard(), 3) }),
	}
	if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		opts = append(opts, config.WithRegion("us-east-1"))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	if s.endpoint != "" && !strings.Contains(s.endpoint, "amazonaws.com") &&
		os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		// A non-AWS endpoint with no credentials configured is DynamoDB Local, which accepts
		// any: supply some rather than asking the instance metadata service.
		cfg.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "queues-local"}, nil
		})
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if s.endpoint != "" {
			o.BaseEndpoint = aws.String(s.endpoint)
		}
		if tp := telemetry.AWSTracerProvider(); tp != nil {
			o.TracerProvider = tp
		}
	}), nil
}

// backendFlags are the settings api and pusher share: the Redis and DynamoDB they run on, the
// signing keys and the log level.
type backendFlags struct {
	store    storeFlags
	redisURL string
	cluster  bool
	sigKeys  string
	level    string
}

// register adds the flags to fs; keysUsage is the command's help for -signing-keys.
func (b *backendFlags) register(fs *pflag.FlagSet, keysUsage string) {
	fs.StringVar(&b.redisURL, "redis-url", env("QUEUES_REDIS_URL", "redis://127.0.0.1:6379"), "redis://host:port[/db]; comma-separated seeds with -redis-cluster (QUEUES_REDIS_URL)")
	fs.BoolVar(&b.cluster, "redis-cluster", false, "the Redis URLs are Redis Cluster seeds (QUEUES_REDIS_CLUSTER)")
	bindEnv(fs, "redis-cluster", "QUEUES_REDIS_CLUSTER")
	fs.StringVar(&b.sigKeys, "signing-keys", env("QUEUES_SIGNING_KEYS", ""), keysUsage)
	fs.StringVar(&b.level, "log-level", env("QUEUES_LOG_LEVEL", defaultLogLevel), "debug, info, warn or error (QUEUES_LOG_LEVEL)")
	b.store.register(fs)
}

// backend is what backendFlags name: the logger, the signing keys and the clients of Redis and
// DynamoDB.
type backend struct {
	log  *slog.Logger
	ring *signingkeys.Ring
	rdb  redis.UniversalClient
	ddb  *dynamodb.Client
}

// connect builds the logger, reads the signing keys and makes the Redis and DynamoDB clients,
// after the flags are parsed. The caller closes rdb.
func (b *backendFlags) connect(ctx context.Context) (*backend, error) {
	log := logger(b.level)
	ring, err := signingKeys(b.sigKeys)
	if err != nil {
		return nil, err
	}
	rdb, err := redisClient(b.redisURL, b.cluster)
	if err != nil {
		return nil, err
	}
	ddb, err := b.store.client(ctx)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return &backend{log: log, ring: ring, rdb: rdb, ddb: ddb}, nil
}

// redisClient connects to QUEUES_REDIS_URL: one URL, or comma-separated seed URLs of a
// Redis Cluster.
func redisClient(url string, cluster bool) (redis.UniversalClient, error) {
	if url == "" {
		return nil, errors.New("no Redis URL: set QUEUES_REDIS_URL or -redis-url")
	}
	urls := strings.Split(url, ",")
	if !cluster {
		if len(urls) != 1 {
			return nil, errors.New("several Redis URLs need QUEUES_REDIS_CLUSTER=true")
		}
		o, err := redis.ParseURL(urls[0])
		if err != nil {
			return nil, err
		}
		return redis.NewClient(o), nil
	}
	co := &redis.ClusterOptions{}
	for _, u := range urls {
		o, err := redis.ParseURL(strings.TrimSpace(u))
		if err != nil {
			return nil, err
		}
		co.Addrs = append(co.Addrs, o.Addr)
		co.Username, co.Password, co.TLSConfig = o.Username, o.Password, o.TLSConfig
	}
	return redis.NewClusterClient(co), nil
}

// signingKeys reads QUEUES_SIGNING_KEYS.
func signingKeys(s string) (*signingkeys.Ring, error) {
	if s == "" {
		return nil, errors.New("no signing keys: set QUEUES_SIGNING_KEYS to kid:base64secret[,…] (every replica the same list)")
	}
	return signingkeys.Parse(s)
}

func rateFlags(fs *pflag.FlagSet, r *api.Rates) {
	fs.IntVar(&r.StandardSend, "rate-send", api.DefaultRates.StandardSend, "send requests/s per standard queue (QUEUES_RATE_SEND)")
	bindEnv(fs, "rate-send", "QUEUES_RATE_SEND")
	fs.IntVar(&r.StandardReceive, "rate-receive", api.DefaultRates.StandardReceive, "receive requests/s per standard queue (QUEUES_RATE_RECEIVE)")
	bindEnv(fs, "rate-receive", "QUEUES_RATE_RECEIVE")
	fs.IntVar(&r.FIFOSend, "rate-fifo-send", api.DefaultRates.FIFOSend, "send requests/s per fifo queue (QUEUES_RATE_FIFO_SEND)")
	bindEnv(fs, "rate-fifo-send", "QUEUES_RATE_FIFO_SEND")
	fs.IntVar(&r.FIFOReceive, "rate-fifo-receive", api.DefaultRates.FIFOReceive, "receive requests/s per fifo queue (QUEUES_RATE_FIFO_RECEIVE)")
	bindEnv(fs, "rate-fifo-receive", "QUEUES_RATE_FIFO_RECEIVE")
}

func logger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// adminFlag registers -admin-listen (QUEUES_ADMIN_LISTEN); explicit reports whether the user
// chose the address (then failing to bind it stops the command).
func adminFlag(fs *pflag.FlagSet) (addr *string, explicit func() bool) {
	_, inEnv := os.LookupEnv("QUEUES_ADMIN_LISTEN")
	addr = fs.String("admin-listen", env("QUEUES_ADMIN_LISTEN", adminhttp.DefaultListen),
		"address serving /metrics and /debug/pprof, off the public port; off: none (QUEUES_ADMIN_LISTEN)")
	return addr, func() bool {
		set := inEnv
		fs.Visit(func(f *pflag.Flag) { set = set || f.Name == "admin-listen" })
		return set
	}
}

// proxyFlags are -trusted-proxies (QUEUES_TRUSTED_PROXIES): the CIDRs of the proxies in
// front of the API, whose X-Forwarded-For names a request's source (api.TrustedProxies).
type proxyFlags struct {
	raw     string
	trusted api.TrustedProxies
}

func (p *proxyFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&p.raw, "trusted-proxies", env("QUEUES_TRUSTED_PROXIES", ""),
		"comma-separated CIDRs of the load balancers in front of the API; from them X-Forwarded-For names the client (empty: the TCP peer is the client; QUEUES_TRUSTED_PROXIES)")
}

func (p *proxyFlags) validate() error {
	t, err := api.ParseTrustedProxies(p.raw)
	if err != nil {
		return fmt.Errorf("QUEUES_TRUSTED_PROXIES (-trusted-proxies): %w", err)
	}
	p.trusted = t
	return nil
}

// tenancyFlags are -default-limits (QUEUES_DEFAULT_LIMITS), the project limits of projects
// without their own as a JSON object of any subset of them, and -usage-flush-every
// (QUEUES_USAGE_FLUSH_EVERY), how often the usage meter flushes (at most 10 s, which is what
// the metering promise allows). validate parses them; a malformed value is a start-up error
// naming the variable.
type tenancyFlags struct {
	limits, flushEvery string
	defaults           tenancy.Limits
	every              time.Duration
}

func (t *tenancyFlags) register(fs *pflag.FlagSet) {
	t.registerLimits(fs)
	fs.StringVar(&t.flushEvery, "usage-flush-every", env("QUEUES_USAGE_FLUSH_EVERY", tenancy.FlushEvery.String()),
		"how often usage counts are flushed to the metadata store, 100ms to 10s (QUEUES_USAGE_FLUSH_EVERY)")
}

// registerLimits registers -default-limits alone (admin project limits reads it).
func (t *tenancyFlags) registerLimits(fs *pflag.FlagSet) {
	fs.StringVar(&t.limits, "default-limits", env("QUEUES_DEFAULT_LIMITS", ""),
		`default project limits, JSON, any subset: {"maxQueues":1000,"maxSubscriptions":100,"maxStoredBytes":1073741824,"requestsPerSecond":10000,"maxWaitingReceives":1000} (QUEUES_DEFAULT_LIMITS)`)
}

func (t *tenancyFlags) validate() error {
	if err := t.validateLimits(); err != nil {
		return err
	}
	d, err := time.ParseDuration(t.flushEvery)
	if err != nil || d < 100*time.Millisecond || d > 10*time.Second {
		return fmt.Errorf("QUEUES_USAGE_FLUSH_EVERY (-usage-flush-every) = %q: want a duration from 100ms to 10s", t.flushEvery)
	}
	t.every = d
	return nil
}

func (t *tenancyFlags) validateLimits() error {
	l, err := tenancy.ParseDefaults(t.limits)
	if err != nil {
		return fmt.Errorf("QUEUES_DEFAULT_LIMITS (-default-limits): %w", err)
	}
	t.defaults = l
	return nil
}
