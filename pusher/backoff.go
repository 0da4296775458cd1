package pusher

import (
	"time"

	"github.com/queueshq/queues/sdk/go/webhook"
)

// Backoff is how long a message waits after a failed push on its attempt-th delivery
// (attempt = its receiveCount, 1 for the first): base = min(1 s × 2^(attempt−1), 10 min), and
// the wait is base/2 + random(0, base/2). randN(n) returns a uniform value in [0, n]. It is
// package webhook's, which `queues listen` shares.
func Backoff(attempt int, randN func(n int64) int64) time.Duration {
	return webhook.Backoff(attempt, randN)
}
