package rediskeys

import "github.com/queueshq/queues/pkg/ids"

// Push delivery (pusher, pkg/meta/pushlog). The coordinator's keys start with a prefix so
// tests can run fleets side by side on one server; production uses PushPrefix.
//
//	<prefix>:members          ZSET  live pusher replicas -> when their heartbeat lapses (ms,
//	                                Redis's clock: lease/heartbeat.lua)
//	<prefix>:lease:{<sub>}    STRING "<member>|<token>" of the subscription's lease holder (PX)
//	<prefix>:fence:{<sub>}    STRING the subscription's last lease token (INCR)
//	queues:push:gen:<queue>   STRING generation of the queue's subscription, bumped by the API
//	                                on every change before it answers
//	queues:push:attempts:{<sub>} LIST the subscription's last push attempts (newest first)
//	queues:push:health:{<sub>} STRING JSON of the subscription's health record (meta.Health)
//	queues:push:changed       channel: a subscription changed (payload: the queue id)

// PushPrefix is the default prefix of the push coordinator's keys.
const PushPrefix = "queues:push"

// PushMembers is the zset of live pusher replicas under prefix.
func PushMembers(prefix string) string { return prefix + ":members" }

// PushLease and PushFence are a subscription's lease and its token counter under prefix; they
// share the subscription's hash tag, so one script reaches both on Cluster.
func PushLease(prefix string, sub ids.ID) string { return prefix + ":lease:{" + sub.String() + "}" }

// PushFence is a subscription's lease token counter (see PushLease).
func PushFence(prefix string, sub ids.ID) string { return prefix + ":fence:{" + sub.String() + "}" }

// PushGeneration is the queue's subscription generation counter.
func PushGeneration(queue ids.ID) string { return "queues:push:gen:" + queue.String() }

// PushAttempts is the list of a subscription's last push attempts.
func PushAttempts(sub ids.ID) string { return "queues:push:attempts:{" + sub.String() + "}" }

// PushHealth is a subscription's health record (endpoint health, issue 37).
func PushHealth(sub ids.ID) string { return "queues:push:health:{" + sub.String() + "}" }

// PushChanges is the channel on which the API announces subscription changes.
const PushChanges = "queues:push:changed"

// MetaChannel is the channel of the metadata cache's invalidations (pkg/metacache).
const MetaChannel = "queues:meta"

// SQSAttempt is a remembered SQS receive attempt (pkg/sqs), key "<queue id>/<attempt id>":
// one string per attempt, expiring with the window.
func SQSAttempt(key string) string { return "queues:sqs:attempt:" + key }

// SQSAttemptBytes counts the bytes of a project's SQS receive attempts remembered in the
// current window (pkg/sqs): a STRING counter (INCRBY) that expires with the window.
func SQSAttemptBytes(project ids.ID) string { return "queues:sqs:attemptbytes:" + project.String() }

// Tenancy (pkg/tenancy). Each project's keys share the hash tag {p:<project>}.

// Waiting is the zset of a project's parked long polls (tenancy's park.lua).
func Waiting(project ids.ID) string { return "tenancy:{p:" + project.String() + "}:waiting" }

// WaitingLeases is the hash of how many slots each member of Waiting stands for: a replica's
// lease of several slots is one member (tenancy's lease.lua); a member without an entry is one.
func WaitingLeases(project ids.ID) string {
	return "tenancy:{p:" + project.String() + "}:waiting:leases"
}

// WaitingLease is a replica's lease: its member in Waiting and WaitingLeases.
func WaitingLease(replica string) string { return replica + ":lease" }

// Rate limiter (pkg/ratelimit). redis_rate stores a budget named n under "rate:" + Budget(n).
// Each budget has a hash tag of its own, "{q:<name>}": the limiter's script touches that one
// key, so it needs no slot shared with anything else, and budgets spread over the cluster.

// Budget is the Redis name (before redis_rate's "rate:") of the limiter budget name.
func Budget(name string) string { return "{q:" + name + "}" }

// QueueRate names a queue's request budget of one operation class.
func QueueRate(queue ids.ID, op string) string { return queue.String() + ":" + op }

// ProjectRate names a project's request-rate budget; the "p:" keeps it apart from queues'.
func ProjectRate(project ids.ID) string { return "p:" + project.String() }

// ProjectByteRate names a project's send-bytes budget ("b:" beside "p:").
func ProjectByteRate(project ids.ID) string { return "b:" + project.String() }
