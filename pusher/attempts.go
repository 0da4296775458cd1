package pusher

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
)

// AttemptsKept is how many recent attempts are kept per subscription.
const AttemptsKept = 100

// attemptsTTL drops the log of a subscription that has not pushed for a week (or was deleted).
const attemptsTTL = 7 * 24 * time.Hour

// Attempt outcomes, for the whole batch.
const (
	AttemptAcknowledged = "acknowledged" // every message acknowledged
	AttemptDeferred     = "deferred"     // every message left for the receiver to settle
	AttemptSettled      = "settled"      // per-message results applied
	AttemptThrottled    = "throttled"    // 429/503 with Retry-After: retried after it
	AttemptFailed       = "failed"       // retried after a backoff
)

// Attempt is one push request as the attempts log keeps it.
type Attempt struct {
	At         time.Time `json:"at"`
	AttemptID  string    `json:"attemptId"`
	MessageIDs []string  `json:"messageIds"`
	StatusCode int       `json:"statusCode,omitempty"` // 0: no response
	LatencyMs  int64     `json:"latencyMs"`
	Outcome    string    `json:"outcome"`
	Error      string    `json:"error,omitempty"`  // an error class (ErrTimeout, …) on failure
	Detail     string    `json:"detail,omitempty"` // a short explanation of the error
}

// AttemptLog keeps each subscription's recent attempts, newest first, bounded.
type AttemptLog interface {
	Record(ctx context.Context, sub ids.ID, a Attempt) error
	Recent(ctx context.Context, sub ids.ID, limit int) ([]Attempt, error)
}

// RedisAttempts keeps the log in one capped Redis list per subscription.
type RedisAttempts struct{ rdb redis.UniversalClient }

// NewRedisAttempts returns the attempts log on rdb.
func NewRedisAttempts(rdb redis.UniversalClient) *RedisAttempts { return &RedisAttempts{rdb: rdb} }

func attemptsKey(sub ids.ID) string { return "queues:push:attempts:{" + sub.String() + "}" }

// Record adds an attempt and trims the list.
func (r *RedisAttempts) Record(ctx context.Context, sub ids.ID, a Attempt) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	k := attemptsKey(sub)
	_, err = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, k, b)
		p.LTrim(ctx, k, 0, AttemptsKept-1)
		p.PExpire(ctx, k, attemptsTTL)
		return nil
	})
	return err
}

// Recent returns up to limit attempts, newest first.
func (r *RedisAttempts) Recent(ctx context.Context, sub ids.ID, limit int) ([]Attempt, error) {
	raw, err := r.rdb.LRange(ctx, attemptsKey(sub), 0, int64(limit)-1).Result()
	if err != nil {
		return nil, apierr.New(apierr.Unavailable, "attempts log unavailable; retry")
	}
	out := make([]Attempt, 0, len(raw))
	for _, s := range raw {
		var a Attempt
		if json.Unmarshal([]byte(s), &a) == nil {
			out = append(out, a)
		}
	}
	return out, nil
}

// Delete drops a subscription's log.
func (r *RedisAttempts) Delete(ctx context.Context, sub ids.ID) error {
	return r.rdb.Del(ctx, attemptsKey(sub)).Err()
}

// MemoryAttempts keeps the log in process memory (one process; tests, embedded mode).
type MemoryAttempts struct {
	mu   sync.Mutex
	logs map[ids.ID][]Attempt
}

// NewMemoryAttempts returns an empty in-memory log.
func NewMemoryAttempts() *MemoryAttempts { return &MemoryAttempts{logs: map[ids.ID][]Attempt{}} }

// Record adds an attempt.
func (m *MemoryAttempts) Record(_ context.Context, sub ids.ID, a Attempt) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := append([]Attempt{a}, m.logs[sub]...)
	if len(l) > AttemptsKept {
		l = l[:AttemptsKept]
	}
	m.logs[sub] = l
	return nil
}

// Recent returns up to limit attempts, newest first.
func (m *MemoryAttempts) Recent(_ context.Context, sub ids.ID, limit int) ([]Attempt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.logs[sub]
	return append([]Attempt(nil), l[:min(limit, len(l))]...), nil
}
