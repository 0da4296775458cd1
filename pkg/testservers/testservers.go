// Package testservers gives tests the real components they run against — redis-server instances
// (single and a 3-master cluster) and DynamoDB Local on free localhost ports, from
// pkg/localservers — tied to a test's or a test binary's life. A DynamoDB named in the
// environment (set by the test command, which starts one for every package) is used instead of
// starting another.
package testservers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/localservers"
)

// EnvDynamoDBEndpoint names a running DynamoDB (Local) that tests use instead of starting one.
const EnvDynamoDBEndpoint = "QUEUES_TEST_DYNAMODB_ENDPOINT"

// The servers themselves come from pkg/localservers; these names keep the tests' spelling.
var (
	StartRedis        = localservers.StartRedis
	StartRedisCluster = localservers.StartRedisCluster
	StartDynamoDB     = localservers.StartDynamoDB
	DynamoClient      = localservers.DynamoClient
	FreePort          = localservers.FreePort
	WaitFor           = localservers.WaitFor
)

// RedisServerBin is the redis-server binary the servers run (looked up on PATH).
const RedisServerBin = localservers.RedisServerBin

var (
	stopMu    sync.Mutex
	stopFuncs []func()

	dynamoOnce     sync.Once
	dynamoEndpoint string
	dynamoErr      error
)

// registerStop adds f to what StopAll runs.
func registerStop(f func()) {
	stopMu.Lock()
	stopFuncs = append(stopFuncs, f)
	stopMu.Unlock()
}

// StopAll stops every server this package started for the test binary (newest first). Call it
// from TestMain after m.Run:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		testservers.StopAll()
//		os.Exit(code)
//	}
//
// or, in a package checked for leaked goroutines, through ThenStopAll. A binary that never
// calls it still does not leak servers: they are started with a parent death signal and die
// with the test process.
func StopAll() {
	stopMu.Lock()
	fs := stopFuncs
	stopFuncs = nil
	stopMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// ThenStopAll wraps m so that its Run stops the servers (StopAll) once the tests are done, and
// goleak, which looks for goroutines left running when Run returns, does not count the ones
// that watch the servers' processes:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(testservers.ThenStopAll(m)) }
func ThenStopAll(m *testing.M) interface{ Run() int } { return thenStopAll{m} }

type thenStopAll struct{ m *testing.M }

func (t thenStopAll) Run() int {
	defer StopAll()
	return t.m.Run()
}

// DynamoDB returns the endpoint URL of a DynamoDB for tests: the one named by
// QUEUES_TEST_DYNAMODB_ENDPOINT, or else a DynamoDB Local that is started once per test binary
// (in memory, -sharedDb) and stopped by StopAll or when the process ends. Tests share the
// server and keep apart by using their own table (see TableName).
func DynamoDB(tb testing.TB) string {
	tb.Helper()
	if ep := os.Getenv(EnvDynamoDBEndpoint); ep != "" {
		return ep
	}
	dynamoOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var stop func()
		dynamoEndpoint, stop, dynamoErr = StartDynamoDB(ctx)
		if dynamoErr == nil {
			registerStop(stop)
		}
	})
	if dynamoErr != nil {
		tb.Fatalf("testservers: DynamoDB Local: %v", dynamoErr)
	}
	return dynamoEndpoint
}

// TableName returns a table name unique to one test: prefix, a dash and a random suffix.
func TableName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// Redis starts a fresh redis-server for the test (see StartRedis), stops it when the test
// ends, and returns its "127.0.0.1:port" address.
func Redis(tb testing.TB, args ...string) string {
	tb.Helper()
	addr, stop, err := StartRedis(context.Background(), args...)
	if err != nil {
		tb.Fatalf("testservers.Redis: %v", err)
	}
	tb.Cleanup(stop)
	return addr
}

// RedisCluster starts a 3-master Redis Cluster for the test (see StartRedisCluster), stops it
// when the test ends, and returns the seed addresses.
func RedisCluster(tb testing.TB) []string {
	tb.Helper()
	addrs, stop, err := StartRedisCluster(context.Background())
	if err != nil {
		tb.Fatalf("testservers.RedisCluster: %v", err)
	}
	tb.Cleanup(stop)
	return addrs
}

// NoRedisURL is a Redis URL nothing answers (port 1 refuses at once).
const NoRedisURL = "redis://127.0.0.1:1"

// GuardDefaultRedis points QUEUES_REDIS_URL, unless a test set it, at NoRedisURL, for the test
// binaries that run the service's commands in process: a command a test starts without naming
// its Redis then fails at once instead of reaching the default redis://127.0.0.1:6379, which
// on a shared machine is somebody else's data. Call it first in TestMain.
func GuardDefaultRedis() {
	if _, ok := os.LookupEnv("QUEUES_REDIS_URL"); !ok {
		_ = os.Setenv("QUEUES_REDIS_URL", NoRedisURL)
	}
}
