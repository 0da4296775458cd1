package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/testenv"
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
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
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
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
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
