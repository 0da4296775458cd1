package meta

import (
	"context"
	"time"

	"github.com/queueshq/queues/pkg/ids"
)

// AttemptsKept is how many recent push attempts are kept per subscription.
const AttemptsKept = 100

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
	Error      string    `json:"error,omitempty"`  // an error class (timeout, …) on failure
	Detail     string    `json:"detail,omitempty"` // a short explanation of the error
}

// AttemptLog keeps each subscription's recent push attempts, newest first, bounded: the
// pusher records, the API lists. Implementations: pushlog (a deployment), embeddedmeta
// (queues serve), memmeta (one process without a store).
type AttemptLog interface {
	Record(ctx context.Context, sub ids.ID, a Attempt) error
	Recent(ctx context.Context, sub ids.ID, limit int) ([]Attempt, error)
}
