package ratelimit

import (
	"context"
	"testing"

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
