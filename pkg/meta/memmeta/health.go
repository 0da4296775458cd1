package memmeta

import (
	"context"
	"sync"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

var _ meta.HealthLog = (*Health)(nil)

// Health is a meta.HealthLog in process memory: the pusher's when it is given none (one
// process; tests).
type Health struct {
	mu   sync.Mutex
	recs map[ids.ID]meta.Health
}

// NewHealth returns an empty in-memory health log.
func NewHealth() *Health { return &Health{recs: map[ids.ID]meta.Health{}} }

// RecordHealth counts outcomes in order.
func (m *Health) RecordHealth(_ context.Context, sub ids.ID, os ...meta.HealthOutcome) (meta.Health, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := cloneHealth(m.recs[sub])
	h.AddAll(os)
	m.recs[sub] = h
	return cloneHealth(h), nil
}

// Health reads a subscription's record.
func (m *Health) Health(_ context.Context, sub ids.ID) (meta.Health, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return cloneHealth(m.recs[sub]), nil
}

// ResetHealthFailures starts a new failure window.
func (m *Health) ResetHealthFailures(_ context.Context, sub ids.ID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.recs[sub]; ok {
		h.ResetFailures()
		m.recs[sub] = h
	}
	return nil
}

// cloneHealth copies the record's slices and last error, which Add changes in place.
func cloneHealth(h meta.Health) meta.Health {
	h.Minutes = append([]meta.HealthBucket(nil), h.Minutes...)
	h.Hours = append([]meta.HealthBucket(nil), h.Hours...)
	if h.LastError != nil {
		e := *h.LastError
		h.LastError = &e
	}
	return h
}
