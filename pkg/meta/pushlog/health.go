package pushlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/rediskeys"
)

var _ meta.HealthLog = (*Health)(nil)

// healthTTL drops the record of a subscription that has not pushed for a week (or was
// deleted); a disabled subscription's state is in its metadata, not here.
const healthTTL = 7 * 24 * time.Hour

// healthRetries bounds the optimistic retries of one change (WATCH): a subscription's record
// has one writer at a time (its lease holder's health writer) besides a resume's reset, so
// conflicts are rare and short.
const healthRetries = 20

// Health keeps each subscription's health record as one JSON string, changed under WATCH, so
// the record's rules live in one place (meta.Health) for every store.
type Health struct{ rdb redis.UniversalClient }

// NewHealth returns the health log on rdb.
func NewHealth(rdb redis.UniversalClient) *Health { return &Health{rdb: rdb} }

// RecordHealth counts outcomes, in order, in one change.
func (r *Health) RecordHealth(ctx context.Context, sub ids.ID, os ...meta.HealthOutcome) (meta.Health, error) {
	return r.change(ctx, sub, true, func(h *meta.Health) { h.AddAll(os) })
}

// Health reads a subscription's record (zero when it never pushed).
func (r *Health) Health(ctx context.Context, sub ids.ID) (meta.Health, error) {
	raw, err := r.rdb.Get(ctx, rediskeys.PushHealth(sub)).Bytes()
	if errors.Is(err, redis.Nil) {
		return meta.Health{}, nil
	}
	if err != nil {
		return meta.Health{}, meta.Unavailable("health record", err)
	}
	var h meta.Health
	if err := json.Unmarshal(raw, &h); err != nil {
		return meta.Health{}, fmt.Errorf("pushlog: corrupt health record of %s: %w", sub, err)
	}
	return h, nil
}

// ResetHealthFailures starts a new failure window.
func (r *Health) ResetHealthFailures(ctx context.Context, sub ids.ID) error {
	_, err := r.change(ctx, sub, false, func(h *meta.Health) { h.ResetFailures() })
	return err
}

// Delete drops a subscription's record.
func (r *Health) Delete(ctx context.Context, sub ids.ID) error {
	return r.rdb.Del(ctx, rediskeys.PushHealth(sub)).Err()
}

// change applies fn to the stored record under WATCH and writes it back; create is false when
// a missing record is left missing.
func (r *Health) change(ctx context.Context, sub ids.ID, create bool, fn func(h *meta.Health)) (meta.Health, error) {
	k := rediskeys.PushHealth(sub)
	var out meta.Health
	txf := func(tx *redis.Tx) error {
		var h meta.Health
		raw, err := tx.Get(ctx, k).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
			if !create {
				return nil
			}
		case err != nil:
			return err
		default:
			if json.Unmarshal(raw, &h) != nil {
				h = meta.Health{} // a corrupt record starts over rather than blocking pushes
			}
		}
		fn(&h)
		b, err := json.Marshal(h)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, k, b, healthTTL)
			return nil
		})
		out = h
		return err
	}
	for range healthRetries {
		err := r.rdb.Watch(ctx, txf, k)
		if !errors.Is(err, redis.TxFailedErr) {
			return out, err
		}
	}
	return out, errors.New("pushlog: health record changed concurrently too often")
}
