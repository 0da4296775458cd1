package redisengine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/testservers"
)

// On Redis Cluster the project's total is folded in after each partition script; a fold lost
// (a replica dying between the two) is made up by the next Sweep of the queue.
func TestClusterLostFoldSwept(t *testing.T) {
	t.Parallel()
	addrs := testservers.RedisCluster(t)
	project := ids.New()
	fail := &testservers.FailScripts{Tag: "{t:" + project.String() + "}"}
	// On each node's client: the engine talks through its own copy of the cluster client
	// (noretry.go), which keeps the options (NewClient) but not the cluster-level hooks.
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, NewClient: func(o *redis.Options) *redis.Client {
		c := redis.NewClient(o)
		c.AddHook(fail)
		return c
	}})
	e := newEngine(t, rdb, enginetest.NewClock(), redisengine.Options{})
	ctx := context.Background()
	q := newQueue(func(q *engine.Queue) { q.Project = project })
	stored := func() int64 { return must(e.StoredBytes(ctx, project)) }

	fail.On.Store(true)
	must(e.Send(ctx, q, []engine.Message{{Body: "12345"}, {Body: "678"}}))
	fail.On.Store(false)
	if n := stored(); n != 0 {
		t.Fatalf("StoredBytes with the fold lost = %d, want 0 (the test's premise)", n)
	}
	if err := e.Sweep(ctx, []engine.Queue{q}); err != nil {
		t.Fatal(err)
	}
	if n := stored(); n != 8 {
		t.Fatalf("StoredBytes after Sweep = %d, want 8", n)
	}
	m := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})).Messages
	fail.On.Store(true)
	must(e.Ack(ctx, q, []engine.Delivery{m[0].Delivery}))
	fail.On.Store(false)
	if err := e.Sweep(ctx, []engine.Queue{q}); err != nil {
		t.Fatal(err)
	}
	if n, want := stored(), int64(8-len(m[0].Body)); n != want {
		t.Fatalf("StoredBytes after a lost fold of an ack and Sweep = %d, want %d", n, want)
	}
}

// Concurrent sends through several engines (replicas) never take a project past its limit
// together: on a single server the send script checks it; on Cluster a reservation does.
func TestLimitConcurrentReplicas(t *testing.T) {
	t.Parallel()
	for name, client := range map[string]func() redis.UniversalClient{
		"single": func() redis.UniversalClient {
			addr := testservers.Redis(t)
			return redis.NewClient(&redis.Options{Addr: addr})
		},
		"cluster": func() redis.UniversalClient {
			addrs := testservers.RedisCluster(t)
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			first := client()
			engines := []*redisengine.Engine{newEngine(t, first, enginetest.NewClock(), redisengine.Options{})}
			for range 2 {
				var c redis.UniversalClient
				if cc, ok := first.(*redis.ClusterClient); ok {
					c = redis.NewClusterClient(cc.Options())
				} else {
					c = redis.NewClient(first.(*redis.Client).Options())
				}
				engines = append(engines, newEngine(t, c, enginetest.NewClock(), redisengine.Options{}))
			}
			project := ids.New()
			const limit = 1000
			q := newQueue(func(q *engine.Queue) { q.Project, q.MaxStoredBytes = project, limit })
			body := string(make([]byte, 30))
			var wg sync.WaitGroup
			var mu sync.Mutex
			accepted, refused := 0, 0
			for i := range 60 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := engines[i%len(engines)].Send(context.Background(), q, []engine.Message{{Body: body}})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						accepted++
					case errors.Is(err, engine.ErrStoredBytesExceeded):
						refused++
					default:
						t.Errorf("send: %v", err)
					}
				}()
			}
			wg.Wait()
			if accepted != limit/30 || refused != 60-limit/30 {
				t.Fatalf("accepted %d and refused %d sends of 30 bytes under a limit of %d", accepted, refused, limit)
			}
			if n := must(engines[0].StoredBytes(context.Background(), project)); n != int64(accepted*30) {
				t.Fatalf("StoredBytes = %d, want %d", n, accepted*30)
			}
		})
	}
}
