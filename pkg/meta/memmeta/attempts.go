package memmeta

import (
	"context"
	"sync"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

var _ meta.AttemptLog = (*Attempts)(nil)

// Attempts is a meta.AttemptLog in process memory: the pusher's when it is given no log
// (one process; tests).
type Attempts struct {
	mu   sync.Mutex
	logs map[ids.ID][]meta.Attempt
}

// NewAttempts returns an empty in-memory log.
func NewAttempts() *Attempts { return &Attempts{logs: map[ids.ID][]meta.Attempt{}} }

// Record adds an attempt.
func (m *Attempts) Record(_ context.Context, sub ids.ID, a meta.Attempt) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := append([]meta.Attempt{a}, m.logs[sub]...)
	if len(l) > meta.AttemptsKept {
		l = l[:meta.AttemptsKept]
	}
	m.logs[sub] = l
	return nil
}

// Recent returns up to limit attempts, newest first.
func (m *Attempts) Recent(_ context.Context, sub ids.ID, limit int) ([]meta.Attempt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.logs[sub]
	return append([]meta.Attempt(nil), l[:min(limit, len(l))]...), nil
}
