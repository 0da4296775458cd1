package engine

import "time"

// Group policies of fifo queues (docs/fifo.md, "Group policies"). Under GroupSequenced (the
// default) any receive may take a group's next batch. Under GroupExclusive the first batch of
// a group that a named consumer receives binds the group to that consumer: while the binding
// lasts, only that consumer receives the group's messages. A binding lasts while the group is
// active — a message of it received by, or acknowledged for, its consumer within the queue's
// GroupAffinity — so a consumer silent for that long loses its groups to the next consumer,
// and an idle group's binding ends. A message sent with EndGroup ends the binding when it is
// settled (acknowledged or dead-lettered). A consumer holds at most MaxGroupsPerConsumer
// bindings: at the cap it receives only from the groups bound to it.
type GroupPolicy string

// The group policies.
const (
	GroupSequenced GroupPolicy = "sequenced"
	GroupExclusive GroupPolicy = "exclusive"
)

// Group policy defaults and bounds (the API validates the queue settings against these).
const (
	DefaultGroupAffinity        = 60 * time.Second
	MinGroupAffinitySeconds     = 1
	MaxGroupAffinitySeconds     = 86_400
	DefaultMaxGroupsPerConsumer = 100
	MaxGroupsPerConsumerHi      = 10_000
)

// ErrConsumerRequired is a receive of an exclusive fifo queue that names no consumer: a
// binding needs someone to bind to.
var ErrConsumerRequired error = refused("a receive of an exclusive queue names its consumer")

// Exclusive reports whether q is a fifo queue whose groups bind to consumers.
func (q Queue) Exclusive() bool { return q.Type == FIFO && q.GroupPolicy == GroupExclusive }

// Affinity is how long a binding of q lasts without activity: GroupAffinity, or
// DefaultGroupAffinity when unset.
func (q Queue) Affinity() time.Duration {
	if q.GroupAffinity <= 0 {
		return DefaultGroupAffinity
	}
	return q.GroupAffinity
}

// GroupCap is the most groups one consumer of q holds bound: MaxGroupsPerConsumer, or
// DefaultMaxGroupsPerConsumer when unset.
func (q Queue) GroupCap() int {
	if q.MaxGroupsPerConsumer <= 0 {
		return DefaultMaxGroupsPerConsumer
	}
	return q.MaxGroupsPerConsumer
}
