package ratelimit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/testservers"
)

func check(t *testing.T, allow func(key string, rate int) (bool, error)) {
	t.Helper()
	// A budget of 5 a second admits a burst of 5 and refuses the sixth; keys are separate.
	for i := range 5 {
		ok, err := allow("q1:send", 5)
		if err != nil || !ok {
			t.Fatalf("request %d refused: %v", i, err)
		}
	}
	if ok, _ := allow("q1:send", 5); ok {
		t.Fatal("sixth request within the second admitted")
	}
	if ok, _ := allow("q2:send", 5); !ok {
		t.Fatal("another key shares the budget")
	}
}

func TestRedis(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testservers.Redis(t)})
	defer rdb.Close()
	l := NewRedis(rdb)
	check(t, func(key string, rate int) (bool, error) {
		d, err := l.Allow(context.Background(), key, rate)
		return d == 0, err
	})
	// Two replicas share one budget.
	other := NewRedis(rdb)
	if d, _ := other.Allow(context.Background(), "q1:send", 5); d == 0 {
		t.Fatal("a second replica has its own budget")
	}
	_ = rdb.Close()
	if _, err := l.Allow(context.Background(), "q3", 5); apierr.CodeOf(err) != apierr.Unavailable {
		t.Fatalf("closed Redis: %v", err)
	}
}

func TestLocal(t *testing.T) {
	l := NewLocal()
	check(t, func(key string, rate int) (bool, error) {
		d, err := l.Allow(context.Background(), key, rate)
		return d == 0, err
	})
}

func TestLeased(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testservers.Redis(t)})
	defer rdb.Close()
	ctx := context.Background()
	// Small limits behave exactly like Redis.
	l := NewLeased(rdb)
	check(t, func(key string, rate int) (bool, error) {
		d, err := l.Allow(ctx, key, rate)
		return d == 0, err
	})
	// Large ones: two replicas (one leasing, one not) share one budget of 1000 a second
	// (burst 1000) and together admit no more than it, nor much less (a lease is 20).
	a, b, plain := NewLeased(rdb), NewLeased(rdb), NewRedis(rdb)
	// Requests go until the first refusal (bounded): by then the replicas together have
	// admitted the burst, plus what refilled meanwhile (at 1000 a second; the loop is slow
	// under -race on a busy machine), and no more.
	admitted := 0
	var retry time.Duration
	start := time.Now()
	for i := 0; retry == 0 && i < 20000; i++ {
		var d time.Duration
		var err error
		switch i % 3 {
		case 0:
			d, err = a.Allow(ctx, "big:send", 1000)
		case 1:
			d, err = b.Allow(ctx, "big:send", 1000)
		default:
			d, err = plain.Allow(ctx, "big:send", 1000)
		}
		if err != nil {
			t.Fatal(err)
		}
		if d == 0 {
			admitted++
		} else {
			retry = d
		}
	}
	refill := int(time.Since(start).Seconds()*1000) + 1
	if admitted < 1000-2*20 || admitted > 1000+refill {
		t.Fatalf("admitted %d before the first refusal against a shared budget of 1000 (refill %d)", admitted, refill)
	}
	if retry <= 0 || retry > time.Second {
		t.Fatalf("retry after %v", retry)
	}
	_ = rdb.Close()
	if _, err := NewLeased(rdb).Allow(ctx, "q9", 5000); apierr.CodeOf(err) != apierr.Unavailable {
		t.Fatalf("closed Redis: %v", err)
	}
}

// countCalls counts the commands a client sends to Redis.
type countCalls struct{ n atomic.Int64 }

func (c *countCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *countCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *countCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLeasedRefusalRemembered: once Redis has refused a key's budget, calls over it are
// refused locally, with the Retry-After still left, and without a round trip, until the
// refusal's wait has passed; then Redis is asked again. Byte budgets alike, for a call as
// large or larger than the refused one.
func TestLeasedRefusalRemembered(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testservers.Redis(t)})
	defer rdb.Close()
	calls := &countCalls{}
	rdb.AddHook(calls)
	ctx := context.Background()
	now := time.Now()
	l := NewLeased(rdb)
	l.now = func() time.Time { return now }
	var wait time.Duration
	for i := 0; wait == 0 && i < 1000; i++ { // a budget of 100 a second: the burst, then a refusal
		var err error
		if wait, err = l.Allow(ctx, "over", 100); err != nil {
			t.Fatal(err)
		}
	}
	if wait == 0 {
		t.Fatal("never refused")
	}
	before := calls.n.Load()
	for range 50 {
		d, err := l.Allow(ctx, "over", 100)
		if err != nil || d <= 0 || d > wait {
			t.Fatalf("over the budget: wait %v, err %v (first refusal's wait %v)", d, err, wait)
		}
	}
	if got := calls.n.Load() - before; got != 0 {
		t.Fatalf("50 refused calls made %d Redis calls, want none", got)
	}
	now = now.Add(wait) // the refusal's wait has passed: Redis decides again
	_, _ = l.Allow(ctx, "over", 100)
	if calls.n.Load() == before {
		t.Fatal("Redis was not asked once the refusal's wait had passed")
	}
	// A byte budget: a refused 1,000-unit call refuses the next ones of 1,000 or more locally;
	// a smaller one asks Redis.
	for i := 0; i < 1000; i++ {
		if d, _ := l.AllowN(ctx, "bytes", 10_000, 1000); d > 0 {
			break
		}
	}
	before = calls.n.Load()
	if d, _ := l.AllowN(ctx, "bytes", 10_000, 2000); d <= 0 || calls.n.Load() != before {
		t.Fatalf("a larger call after a refusal: wait %v, %d Redis calls", d, calls.n.Load()-before)
	}
	_, _ = l.AllowN(ctx, "bytes", 10_000, 10)
	if calls.n.Load() == before {
		t.Fatal("a smaller call than the refused one did not ask Redis")
	}
}

// TestLeasedOverLimitCostsLeases: a tenant calling without pause over its limit is admitted
// a lease at a time, and costs a couple of round trips a lease, not a couple a token. Before
// the lease took what the budget held, every admission near the limit made two round trips
// (the lease refused, then a single token), and every refusal two more.
func TestLeasedOverLimitCostsLeases(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testservers.Redis(t)})
	defer rdb.Close()
	calls := &countCalls{}
	rdb.AddHook(calls)
	ctx := context.Background()
	l := NewLeased(rdb)
	const rate = 1000 // leases of 20
	for {             // spend the burst
		d, err := l.Allow(ctx, "flood", rate)
		if err != nil {
			t.Fatal(err)
		}
		if d > 0 {
			break
		}
	}
	before, admitted := calls.n.Load(), 0
	for admitted < 200 {
		d, err := l.Allow(ctx, "flood", rate)
		if err != nil {
			t.Fatal(err)
		}
		if d == 0 {
			admitted++
		}
	}
	if got := calls.n.Load() - before; got*4 > int64(admitted) {
		t.Fatalf("%d admissions over the limit made %d Redis calls, want at most a quarter as many", admitted, got)
	}
}
