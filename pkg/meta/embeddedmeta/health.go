package embeddedmeta

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// bHealth holds each subscription's health record: subscription id -> JSON of meta.Health,
// deleted with the subscription.
var bHealth = []byte("health")

// HealthLog is the pusher's health log (meta.HealthLog) kept in the embedded metadata file,
// so a restart keeps how long an endpoint has been failing.
type HealthLog struct{ s *Store }

var _ meta.HealthLog = (*HealthLog)(nil)

// NewHealthLog returns the health log in s.
func NewHealthLog(s *Store) *HealthLog { return &HealthLog{s: s} }

// RecordHealth counts outcomes, in order, in one transaction (batched with concurrent ones).
func (l *HealthLog) RecordHealth(_ context.Context, sub ids.ID, os ...meta.HealthOutcome) (meta.Health, error) {
	var out meta.Health
	err := storageErr(l.s.db.Batch(func(tx *bolt.Tx) error {
		var h meta.Health
		b := tx.Bucket(bHealth)
		if _, err := getJSON(b, sub[:], &h); err != nil {
			return err
		}
		h.AddAll(os)
		out = h
		return putJSON(b, sub[:], h)
	}))
	return out, err
}

// Health reads a subscription's record (zero when it never pushed).
func (l *HealthLog) Health(_ context.Context, sub ids.ID) (meta.Health, error) {
	var h meta.Health
	err := l.s.view(func(tx *bolt.Tx) error {
		_, err := getJSON(tx.Bucket(bHealth), sub[:], &h)
		return err
	})
	return h, err
}

// ResetHealthFailures starts a new failure window.
func (l *HealthLog) ResetHealthFailures(_ context.Context, sub ids.ID) error {
	return l.s.update(func(tx *bolt.Tx) error {
		var h meta.Health
		b := tx.Bucket(bHealth)
		ok, err := getJSON(b, sub[:], &h)
		if err != nil || !ok {
			return err
		}
		h.ResetFailures()
		return putJSON(b, sub[:], h)
	})
}
