package tenancy

import "github.com/queueshq/queues/pkg/ids"

// Redis keys of the tenancy control plane. Each project's keys share the hash tag
// {p:<project>}, so in Redis Cluster they live in one slot.

// waitingKey is the zset of a project's parked long polls (park.lua).
func waitingKey(project ids.ID) string { return "tenancy:{p:" + project.String() + "}:waiting" }

// RateKey is the project's request-rate budget in the rate limiter, which prefixes it with
// its own namespace ("{q:" + key + "}"); the "p:" keeps it apart from every queue's keys.
func RateKey(project ids.ID) string { return "p:" + project.String() }
