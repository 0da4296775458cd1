package redisengine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
)

// Headroom of the shared store
// (docs/stored-bytes.md#headroom-of-the-shared-store-queues_redis_send_limit). Once Redis's
// used_memory passes the high-water mark, sends are refused (503 unavailable, Retry-After) while
// everything that drains — receive, settlements, purge, group purge, delete, the sweeper — keeps
// working, up to and past maxmemory (those scripts carry the allow-oom flag, scripts.go). The mark
// leaves the room between it and maxmemory for the drain's own small writes (a received message's
// state, a dead-letter move, the limiter), so a full store can always be emptied.
//
// used_memory is sampled at most once per memorySample per Engine: the first send after a
// sample is that old takes the sample (one INFO round trip, a second's worth of sends share
// it); the others read the last answer, so the check costs no round trip. On Redis Cluster
// every master is sampled and sends stop when any one is past its mark.

// DefaultSendLimit is the high-water mark when none is configured.
const DefaultSendLimit = "90%"

// memorySample is how often used_memory is read (at most; only while sends arrive).
const memorySample = time.Second

// sendRetryAfter is the Retry-After of a send refused for memory.
const sendRetryAfter = time.Second

// SendLimit is a memory high-water mark: a fraction of maxmemory, or a byte count. The zero
// value is no mark.
type SendLimit struct {
	Fraction float64 // of maxmemory (0 < f <= 1); a server without maxmemory has no mark
	Bytes    int64   // absolute used_memory
}

// ParseSendLimit reads a high-water mark: "90%" (of maxmemory; 1–100), a byte count "800000000"
// or with a unit "800mb", "2gb", "512MiB" (k, m, g: powers of 1024, as Redis's own maxmemory
// reads them), or "off" for none. "" is DefaultSendLimit.
func ParseSendLimit(s string) (SendLimit, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		s = DefaultSendLimit
	}
	if s == "off" || s == "none" {
		return SendLimit{}, nil
	}
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || f <= 0 || f > 100 {
			return SendLimit{}, fmt.Errorf("send limit %q: a percentage must be above 0 and at most 100", s)
		}
		return SendLimit{Fraction: f / 100}, nil
	}
	num := strings.TrimRight(s, "kmgbi")
	unit := strings.TrimSuffix(strings.TrimSuffix(s[len(num):], "b"), "i")
	mul := map[string]int64{"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit]
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if mul == 0 || err != nil || n <= 0 || n > (1<<62)/mul {
		return SendLimit{}, fmt.Errorf("send limit %q: want a percentage of maxmemory (\"90%%\"), a byte count (\"800mb\") or \"off\"", s)
	}
	return SendLimit{Bytes: n * mul}, nil
}

// mark is the used_memory beyond which sends stop on a server with maxmemory max (0: none).
func (l SendLimit) mark(max int64) int64 {
	if l.Bytes > 0 {
		return l.Bytes
	}
	if l.Fraction > 0 && max > 0 {
		return int64(l.Fraction * float64(max))
	}
	return 0
}

// headroom is the Engine's view of the store's memory.
type headroom struct {
	limit    SendLimit
	start    time.Time    // monotonic base of sampled
	sampled  atomic.Int64 // when the last sample began (ns since start; 0: never)
	running  atomic.Bool
	full     atomic.Bool // the last sample found a server past its mark
	mu       sync.Mutex
	lastUsed int64 // for the error message; guarded by mu
	lastMark int64
}

// errMemoryFull answers a send while the store is past its high-water mark.
func (h *headroom) errFull() error {
	h.mu.Lock()
	used, mark := h.lastUsed, h.lastMark
	h.mu.Unlock()
	return &engine.Failure{Err: engine.ErrUnavailable, RetryAfter: sendRetryAfter, Op: fmt.Sprintf(
		"the message store is nearly full (%d of %d bytes used); sends are paused while consumers drain queues", used, mark)}
}

// checkHeadroom refuses a send while the last sample found the store past its mark, and
// starts a new sample when the last one is older than memorySample.
func (e *Engine) checkHeadroom() error {
	h := &e.head
	if h.limit == (SendLimit{}) {
		return nil
	}
	now := time.Since(h.start).Nanoseconds() + 1
	if now-h.sampled.Load() >= memorySample.Nanoseconds() && h.running.CompareAndSwap(false, true) {
		h.sampled.Store(now)
		e.sampleMemory()
	}
	if h.full.Load() {
		return h.errFull()
	}
	return nil
}

// sampleMemory reads used_memory and maxmemory of every master.
func (e *Engine) sampleMemory() {
	h := &e.head
	defer h.running.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var mu sync.Mutex
	full := false
	var worstUsed, worstMark int64
	check := func(ctx context.Context, c *redis.Client) error {
		used, max, err := memoryOf(ctx, c)
		if err != nil {
			return err
		}
		mark := h.limit.mark(max)
		mu.Lock()
		defer mu.Unlock()
		if mark > 0 && used >= mark && !full {
			full, worstUsed, worstMark = true, used, mark
		}
		return nil
	}
	var err error
	switch c := e.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, check)
	case *redis.Ring:
		err = c.ForEachShard(ctx, check)
	case *redis.Client:
		err = check(ctx, c)
	}
	if err != nil {
		// Unknown: keep the last answer (a server that cannot answer INFO fails sends anyway).
		e.log.Warn("redisengine: sampling Redis memory failed", "error", err)
		return
	}
	h.mu.Lock()
	h.lastUsed, h.lastMark = worstUsed, worstMark
	h.mu.Unlock()
	h.full.Store(full)
}

// memoryOf reads used_memory and maxmemory from INFO memory.
func memoryOf(ctx context.Context, c *redis.Client) (used, max int64, err error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "used_memory":
			used, err = strconv.ParseInt(v, 10, 64)
			found++
		case "maxmemory":
			max, err = strconv.ParseInt(v, 10, 64)
			found++
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if found != 2 {
		return 0, 0, errors.New("INFO memory lacks used_memory or maxmemory")
	}
	return used, max, nil
}
