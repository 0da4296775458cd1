// Package pushlog is the per-subscription push record a deployment keeps in Redis rather
// than DynamoDB: the push attempts log (meta.AttemptLog), written on every push and read only
// by GET …/subscription/attempts, and the push health record (meta.HealthLog), shared by the
// API and the pusher fleet.
package pushlog

import (
	"context"
	"encoding/json"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/rediskeys"
)

var _ meta.AttemptLog = (*Attempts)(nil)

// attemptsTTL drops the log of a subscription that has not pushed for a week (or was deleted).
const attemptsTTL = 7 * 24 * time.Hour

// Attempts keeps the log in one capped Redis list per subscription.
type Attempts struct{ rdb redis.UniversalClient }

// NewAttempts returns the attempts log on rdb.
func NewAttempts(rdb redis.UniversalClient) *Attempts { return &Attempts{rdb: rdb} }

func attemptsKey(sub ids.ID) string { return rediskeys.PushAttempts(sub) }

// Record adds an attempt and trims the list.
func (r *Attempts) Record(ctx context.Context, sub ids.ID, a meta.Attempt) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	k := attemptsKey(sub)
	_, err = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, k, b)
		p.LTrim(ctx, k, 0, meta.AttemptsKept-1)
		p.PExpire(ctx, k, attemptsTTL)
		return nil
	})
	return err
}

// Recent returns up to limit attempts, newest first.
func (r *Attempts) Recent(ctx context.Context, sub ids.ID, limit int) ([]meta.Attempt, error) {
	raw, err := r.rdb.LRange(ctx, attemptsKey(sub), 0, int64(limit)-1).Result()
	if err != nil {
		return nil, meta.Unavailable("attempts log", err)
	}
	out := make([]meta.Attempt, 0, len(raw))
	for _, s := range raw {
		var a meta.Attempt
		if json.Unmarshal([]byte(s), &a) == nil {
			out = append(out, a)
		}
	}
	return out, nil
}

// Delete drops a subscription's log.
func (r *Attempts) Delete(ctx context.Context, sub ids.ID) error {
	return r.rdb.Del(ctx, attemptsKey(sub)).Err()
}
