package embeddedmeta

import (
	"context"
	"encoding/json"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

// AttemptLog is the pusher's attempts log (meta.AttemptLog) kept durably in the embedded metadata file: one JSON
// record per attempt, the newest meta.AttemptsKept per subscription, deleted with the
// subscription. It survives a restart, as the Redis log of a deployment survives a pusher's.
type AttemptLog struct{ s *Store }

var _ meta.AttemptLog = (*AttemptLog)(nil)

// NewAttemptLog returns the attempts log in s.
func NewAttemptLog(s *Store) *AttemptLog { return &AttemptLog{s: s} }

// Record adds an attempt.
func (l *AttemptLog) Record(ctx context.Context, sub ids.ID, a meta.Attempt) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return l.s.AppendAttempt(ctx, sub, b, meta.AttemptsKept)
}

// Recent returns up to limit attempts, newest first. A record that does not decode is skipped.
func (l *AttemptLog) Recent(ctx context.Context, sub ids.ID, limit int) ([]meta.Attempt, error) {
	raw, err := l.s.RecentAttempts(ctx, sub, limit)
	if err != nil {
		return nil, err
	}
	out := make([]meta.Attempt, 0, len(raw))
	for _, r := range raw {
		var a meta.Attempt
		if json.Unmarshal(r, &a) == nil {
			out = append(out, a)
		}
	}
	return out, nil
}
