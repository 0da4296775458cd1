// Package stacktest starts a real Queues API for the tests of the SDK and the CLI: a
// redis-server and DynamoDB Local (pkg/testservers), the metadata table migrated, API replicas
// and a pusher fleet member built by services/queues/stack exactly as production builds them (push
// endpoints on loopback allowed), the API served by httptest.
//
//	func TestMain(m *testing.M) {
//		srv, err := stacktest.Start(context.Background())
//		…
//		code := m.Run()
//		srv.Close()
//		os.Exit(code)
//	}
package stacktest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/services/queues/stack"
)

// Operator is the operator credential of the servers Start starts.
const Operator = "clienttest-operator-secret"

// Server is a running API (one replica; Replica starts more on the same storage).
type Server struct {
	// URL is the first replica's base URL.
	URL string

	rdb   *redis.Client
	ddb   *dynamodb.Client
	table string
	ring  *signingkeys.Ring

	mu     sync.Mutex
	closes []func()
}

// Start starts Redis, DynamoDB Local (or uses the one named by QUEUES_TEST_DYNAMODB_ENDPOINT)
// and one API replica.
func Start(ctx context.Context) (*Server, error) {
	s := &Server{}
	be, err := testservers.StartBackends(ctx, "client", dynamometa.Migrate)
	if err != nil {
		return nil, err
	}
	s.closes = append(s.closes, be.Stop)
	addr := be.RedisAddr
	s.ddb, s.table = be.Dynamo, be.Table
	if s.ring, err = signingkeys.Generate("ct"); err != nil {
		s.Close()
		return nil, err
	}
	s.rdb = redis.NewClient(&redis.Options{Addr: addr})
	s.closes = append(s.closes, func() { _ = s.rdb.Close() })
	url, _, err := s.Replica(ctx, stack.Options{})
	if err != nil {
		s.Close()
		return nil, err
	}
	s.URL = url
	p, err := stack.NewPusher(stack.PusherOptions{
		Redis: s.rdb, Dynamo: s.ddb, Table: s.table, Keys: s.ring, AllowPrivate: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	pctx, stopPusher := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(pctx) }()
	s.closes = append(s.closes, func() { stopPusher(); <-done; _ = p.Close() })
	return s, nil
}

// Replica starts another API replica on the same Redis and table, with o's overrides (its
// Redis, Dynamo, Table, Keys and OperatorToken are filled in when empty). It is stopped by
// close or by Server.Close.
func (s *Server) Replica(ctx context.Context, o stack.Options) (url string, close func(), err error) {
	if o.Redis == nil {
		o.Redis = s.rdb
	}
	if o.Dynamo == nil {
		o.Dynamo = s.ddb
	}
	if o.Table == "" {
		o.Table = s.table
	}
	if o.Keys == nil {
		o.Keys = s.ring
	}
	if o.OperatorToken == "" {
		o.OperatorToken = Operator
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.SweepEvery == 0 {
		o.SweepEvery = time.Second
	}
	o.PushAllowPrivate = true
	r, err := stack.New(ctx, o)
	if err != nil {
		return "", nil, err
	}
	srv := httptest.NewServer(r.Handler())
	var once sync.Once
	close = func() { once.Do(func() { r.Drain(); srv.Close(); _ = r.Close() }) }
	s.mu.Lock()
	s.closes = append(s.closes, close)
	s.mu.Unlock()
	return srv.URL, close, nil
}

// Close stops every replica and server Start started (newest first).
func (s *Server) Close() {
	s.mu.Lock()
	fs := s.closes
	s.closes = nil
	s.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// ErrNoServer is returned by Shared when starting the shared server failed before.
var ErrNoServer = errors.New("stacktest: the shared server did not start")

var (
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
)

// Shared returns one server per test binary, started on first use; it dies with the
// process (testservers starts its servers with a parent death signal), or with CloseShared.
func Shared() (*Server, error) {
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		shared, sharedErr = Start(ctx)
	})
	if sharedErr != nil {
		return nil, errors.Join(ErrNoServer, sharedErr)
	}
	return shared, nil
}

// CloseShared stops the shared server, if Shared started one, so that a TestMain checking for
// leaked goroutines (goleak) does not find its replicas and pusher still running. Call it
// once the tests are done: Shared then returns the stopped server.
func CloseShared() {
	if shared != nil {
		shared.Close()
	}
}
