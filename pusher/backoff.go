package pusher

import "time"

// Backoff bounds (SPEC §6).
const (
	backoffUnit = time.Second
	backoffCap  = 10 * time.Minute
)

// Backoff is how long a message waits after a failed push on its attempt-th delivery
// (attempt = its receiveCount, 1 for the first): base = min(1 s × 2^(attempt−1), 10 min), and
// the wait is base/2 + random(0, base/2). randN(n) returns a uniform value in [0, n].
func Backoff(attempt int, randN func(n int64) int64) time.Duration {
	base := backoffUnit
	for i := 1; i < attempt && base < backoffCap; i++ {
		base *= 2
	}
	base = min(base, backoffCap)
	half := base / 2
	return half + time.Duration(randN(int64(base-half)))
}
