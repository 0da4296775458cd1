package redisengine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/testservers"
)

// newEngine makes an engine on a fresh client; both are closed when t ends.
func newEngine(t testing.TB, rdb redis.UniversalClient, clk clock.Clock, opts redisengine.Options) *redisengine.Engine {
	t.Helper()
	e, err := redisengine.New(rdb, clk, opts)
	if err != nil {
		t.Fatalf("redisengine.New: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		rdb.Close()
	})
	return e
}

func harness(newClient func() redis.UniversalClient) enginetest.Harness {
	return enginetest.Harness{
		New: func(t *testing.T) (engine.Engine, *clock.Fake) {
			clk := enginetest.NewClock()
			return newEngine(t, newClient(), clk, redisengine.Options{}), clk
		},
		NewWithPartitionRate: func(t *testing.T, rate int) (engine.Engine, *clock.Fake) {
			clk := enginetest.NewClock()
			return newEngine(t, newClient(), clk, redisengine.Options{PartitionSendRate: rate}), clk
		},
		Recount: redisengine.Recount,
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t)
	enginetest.Run(t, harness(func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: addr})
	}))
}

func TestConformanceCluster(t *testing.T) {
	t.Parallel()
	addrs := testservers.RedisCluster(t)
	enginetest.Run(t, harness(func() redis.UniversalClient {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	}))
}

func TestRefusesEvictingPolicy(t *testing.T) {
	t.Parallel()
	addr := testservers.Redis(t, "--maxmemory-policy", "allkeys-lru")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	_, err := redisengine.New(rdb, enginetest.NewClock(), redisengine.Options{})
	if err == nil {
		t.Fatal("New accepted maxmemory-policy allkeys-lru")
	}
	for _, want := range []string{"allkeys-lru", "noeviction", "deletes queued messages"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not mention %q", err, want)
		}
	}
	// The same server with the policy fixed is accepted.
	if err := rdb.ConfigSet(context.Background(), "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	newEngine(t, redis.NewClient(&redis.Options{Addr: addr}), enginetest.NewClock(), redisengine.Options{})
}

// setPartitions gives a queue n partitions (the count the engine reads from {q:<id>}:p).
func setPartitions(rdb redis.UniversalClient) func(b *testing.B, e engine.Engine, q engine.Queue, n int) {
	return func(b *testing.B, _ engine.Engine, q engine.Queue, n int) {
		if err := rdb.HSet(context.Background(), "{q:"+q.ID.String()+"}:p", "n", n).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// Benchmarks keep partitions where the benchmark puts them: no growth while they run.
var benchOpts = redisengine.Options{PartitionSendRate: 1 << 30}

func BenchmarkRedis(b *testing.B) {
	addr := testservers.Redis(b)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { admin.Close() })
	enginetest.Bench(b, enginetest.BenchHarness{New: func(b *testing.B) (engine.Engine, clock.Clock) {
		return newEngine(b, redis.NewClient(&redis.Options{Addr: addr}), clock.Real{}, benchOpts), clock.Real{}
	}, SetPartitions: setPartitions(admin)})
}

func BenchmarkRedisCluster(b *testing.B) {
	addrs := testservers.RedisCluster(b)
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	b.Cleanup(func() { admin.Close() })
	enginetest.Bench(b, enginetest.BenchHarness{New: func(b *testing.B) (engine.Engine, clock.Clock) {
		return newEngine(b, redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}), clock.Real{}, benchOpts), clock.Real{}
	}, SetPartitions: setPartitions(admin)})
}

// BenchmarkPriorityScale: receives from 10^3..10^5 visible messages spread over ten
// priorities (QUEUES_BENCH_BACKLOGS sets the sizes, e.g. 1000,100000,1000000).
func BenchmarkPriorityScale(b *testing.B) {
	addr := testservers.Redis(b)
	enginetest.BenchPriorityScale(b, enginetest.BenchHarness{New: func(b *testing.B) (engine.Engine, clock.Clock) {
		return newEngine(b, redis.NewClient(&redis.Options{Addr: addr}), clock.Real{}, benchOpts), clock.Real{}
	}}, enginetest.BenchSizes(b, 1000, 10_000, 100_000)...)
}

// BenchmarkDelayScale: receives beside 10^4..10^6 messages delayed over 14 days.
func BenchmarkDelayScale(b *testing.B) {
	addr := testservers.Redis(b)
	enginetest.BenchDelayScale(b, enginetest.BenchHarness{New: func(b *testing.B) (engine.Engine, clock.Clock) {
		return newEngine(b, redis.NewClient(&redis.Options{Addr: addr}), clock.Real{}, benchOpts), clock.Real{}
	}}, 10_000, 100_000, 1_000_000)
}
