package embedded

import (
	"context"
	"encoding/json"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta/embeddedmeta"
	"github.com/queueshq/queues/pusher"
)

// AttemptLog is the pusher's attempts log kept durably in the embedded metadata file: one JSON
// record per attempt, the newest pusher.AttemptsKept per subscription, deleted with the
// subscription. It survives a restart, as the Redis log of a deployment survives a pusher's.
type AttemptLog struct{ s *embeddedmeta.Store }

var _ pusher.AttemptLog = (*AttemptLog)(nil)

// NewAttemptLog returns the attempts log in s.
func NewAttemptLog(s *embeddedmeta.Store) *AttemptLog { return &AttemptLog{s: s} }

// Record adds an attempt.
func (l *AttemptLog) Record(ctx context.Context, sub ids.ID, a pusher.Attempt) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return l.s.AppendAttempt(ctx, sub, b, pusher.AttemptsKept)
}

// Recent returns up to limit attempts, newest first. A record that does not decode is skipped.
func (l *AttemptLog) Recent(ctx context.Context, sub ids.ID, limit int) ([]pusher.Attempt, error) {
	raw, err := l.s.RecentAttempts(ctx, sub, limit)
	if err != nil {
		return nil, err
	}
	out := make([]pusher.Attempt, 0, len(raw))
	for _, r := range raw {
		var a pusher.Attempt
		if json.Unmarshal(r, &a) == nil {
			out = append(out, a)
		}
	}
	return out, nil
}
