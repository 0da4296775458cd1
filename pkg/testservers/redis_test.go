package testservers

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestRedis(t *testing.T) {
	t.Parallel()
	addr := Redis(t)
	if strings.HasSuffix(addr, ":6379") {
		t.Fatalf("started on the default port: %s", addr)
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	policy, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		t.Fatal(err)
	}
	if policy["maxmemory-policy"] != "noeviction" {
		t.Fatalf("maxmemory-policy = %q, want noeviction", policy["maxmemory-policy"])
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestStartRedisArgsOverrideAndStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr, stop, err := StartRedis(ctx, "--maxmemory-policy", "allkeys-lru")
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	policy, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		t.Fatal(err)
	}
	if policy["maxmemory-policy"] != "allkeys-lru" {
		t.Fatalf("maxmemory-policy = %q, want the argument's allkeys-lru", policy["maxmemory-policy"])
	}
	stop()
	stop() // idempotent
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("server still answers after stop")
	}
}

func TestRedisCluster(t *testing.T) {
	t.Parallel()
	addrs := RedisCluster(t)
	if len(addrs) != 3 {
		t.Fatalf("got %d seeds, want 3", len(addrs))
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer c.Close()
	ctx := context.Background()
	// Keys in many slots: every one must be writable through the cluster client.
	for _, k := range []string{"a", "b", "c", "{x}1", "{y}2", "{z}3"} {
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	slots, err := c.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 3 {
		t.Fatalf("cluster has %d shards, want 3 masters", len(slots))
	}
}

// TestGuardDefaultRedis: an unset QUEUES_REDIS_URL points at nothing; a test's own is kept.
func TestGuardDefaultRedis(t *testing.T) {
	t.Setenv("QUEUES_REDIS_URL", "redis://127.0.0.1:7000")
	GuardDefaultRedis()
	if got := os.Getenv("QUEUES_REDIS_URL"); got != "redis://127.0.0.1:7000" {
		t.Fatalf("a set QUEUES_REDIS_URL became %q", got)
	}
	os.Unsetenv("QUEUES_REDIS_URL") // t.Setenv restores it at the end
	GuardDefaultRedis()
	if got := os.Getenv("QUEUES_REDIS_URL"); got != NoRedisURL {
		t.Fatalf("an unset QUEUES_REDIS_URL became %q, want %q", got, NoRedisURL)
	}
}
