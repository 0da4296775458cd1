package sqs

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
	"github.com/queueshq/queues/pkg/testservers"
)

// TestAttemptsBounded (issue 31): remembered fifo receive attempts are copies of payloads
// kept outside maxStoredBytes, so each project may keep at most 16 MiB of them per 5-minute
// window (Redis and memory), and the in-memory store at most 64 MiB and 10,000 entries in
// all, the oldest evicted first. A refused attempt is not stored: its retry is a new receive.
func TestAttemptsBounded(t *testing.T) {
	mib := bytes.Repeat([]byte("m"), 1<<20)
	// budget puts 1 MiB values for one project until one is refused, and checks that the
	// budget held: 16 stored, the 17th refused and not readable, then room again once the
	// window ends (advance), while another project is unaffected.
	budget := func(t *testing.T, a Attempts, advance func()) {
		ctx := context.Background()
		p, other := ids.New(), ids.New()
		stored := 0
		for i := range 20 {
			ok, err := a.Put(ctx, p, fmt.Sprintf("q/%d", i), mib, attemptWindow)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				stored++
			}
		}
		if stored != MaxAttemptBytesPerProject>>20 {
			t.Fatalf("%d MiB of attempts stored in one window, want %d", stored, MaxAttemptBytesPerProject>>20)
		}
		if _, ok, _ := a.Get(ctx, "q/19"); ok {
			t.Fatal("an attempt beyond the budget was stored")
		}
		if _, ok, _ := a.Get(ctx, "q/0"); !ok {
			t.Fatal("an attempt within the budget was not stored")
		}
		if ok, _ := a.Put(ctx, other, "o/0", mib, attemptWindow); !ok {
			t.Fatal("another project's attempt was refused")
		}
		advance()
		if ok, _ := a.Put(ctx, p, "q/next", mib, attemptWindow); !ok {
			t.Fatal("the budget did not come back with a new window")
		}
	}

	t.Run("memory", func(t *testing.T) {
		clk := clock.NewFake(time.Now())
		budget(t, NewMemAttempts(clk), func() { clk.Advance(attemptWindow) })

		// 64 MiB in all: 100 projects' 1 MiB attempts leave the newest 64.
		a := NewMemAttempts(clk).(*memAttempts)
		ctx := context.Background()
		for i := range 100 {
			if ok, _ := a.Put(ctx, ids.New(), fmt.Sprintf("k/%d", i), mib, attemptWindow); !ok {
				t.Fatalf("attempt %d refused", i)
			}
		}
		if a.bytes > maxMemAttemptBytes || len(a.m) != maxMemAttemptBytes>>20 {
			t.Fatalf("%d bytes in %d entries kept, want at most %d bytes", a.bytes, len(a.m), maxMemAttemptBytes)
		}
		if _, ok, _ := a.Get(ctx, "k/35"); ok {
			t.Fatal("an old attempt outlived the byte bound")
		}
		if _, ok, _ := a.Get(ctx, "k/99"); !ok {
			t.Fatal("the newest attempt was evicted")
		}
		// 10,000 entries in all, the oldest evicted first.
		a = NewMemAttempts(clk).(*memAttempts)
		for i := range maxMemAttempts + 500 {
			if ok, _ := a.Put(ctx, ids.New(), fmt.Sprintf("k/%d", i), []byte("x"), attemptWindow); !ok {
				t.Fatalf("attempt %d refused", i)
			}
		}
		if len(a.m) != maxMemAttempts {
			t.Fatalf("%d entries kept, want %d", len(a.m), maxMemAttempts)
		}
		if _, ok, _ := a.Get(ctx, "k/499"); ok {
			t.Fatal("an old attempt outlived the entry bound")
		}
		if _, ok, _ := a.Get(ctx, "k/500"); !ok {
			t.Fatal("a newer attempt was evicted")
		}
		// Expired entries leave as new ones come.
		clk.Advance(attemptWindow)
		_, _ = a.Put(ctx, ids.New(), "fresh", []byte("x"), attemptWindow)
		if len(a.m) != 1 || a.bytes != 1 {
			t.Fatalf("%d entries (%d bytes) after the window, want only the fresh one", len(a.m), a.bytes)
		}
	})

	t.Run("redis", func(t *testing.T) {
		addr, stop, err := testservers.StartRedis(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = rdb.Close() })
		var last ids.ID
		a := NewRedisAttempts(rdb)
		tracked := attemptsSpy{Attempts: a, last: &last}
		budget(t, tracked, func() {
			// The window is the counter's TTL: end it as time would.
			ttl := rdb.TTL(t.Context(), rediskeys.SQSAttemptBytes(last)).Val()
			if ttl <= 0 || ttl > attemptWindow {
				t.Fatalf("the budget counter's TTL is %v, want (0, %v]", ttl, attemptWindow)
			}
			rdb.Del(t.Context(), rediskeys.SQSAttemptBytes(last))
		})
	})
}

// attemptsSpy notes the first project a budget test charges (the one whose window ends).
type attemptsSpy struct {
	Attempts
	last *ids.ID
}

func (s attemptsSpy) Put(ctx context.Context, p ids.ID, key string, val []byte, ttl time.Duration) (bool, error) {
	if *s.last == (ids.ID{}) {
		*s.last = p
	}
	return s.Attempts.Put(ctx, p, key, val, ttl)
}
