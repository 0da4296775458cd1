package tenancy

import (
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// Redis keys of the tenancy control plane (named in pkg/rediskeys).

// waitingKey is the zset of a project's parked long polls (park.lua).
func waitingKey(project ids.ID) string { return rediskeys.Waiting(project) }

// waitingLeasesKey holds how many slots each leased member of waitingKey stands for.
func waitingLeasesKey(project ids.ID) string { return rediskeys.WaitingLeases(project) }

// RateKey is the project's request-rate budget in the rate limiter.
func RateKey(project ids.ID) string { return rediskeys.ProjectRate(project) }

// ByteRateKey is the project's send-bytes budget in the rate limiter.
func ByteRateKey(project ids.ID) string { return rediskeys.ProjectByteRate(project) }
