package redisengine

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// The key layout is documented, and every name built, in pkg/rediskeys (the registry of every
// Redis name); this file gives the engine's scripts their keys in the order they take them.

// partKeys are the keys of one queue partition, as pkg/rediskeys names them; the engine's
// methods below list them in the orders the scripts take them.
type partKeys struct{ rediskeys.Partition }

// keysOf is the partition's keys. Naming them builds two dozen strings, and every script call
// needs them, so the names of recent partitions are kept in a small direct-mapped cache
// (keyCache entries; a partition whose slot another took is named again).
func keysOf(q ids.ID, p int) partKeys {
	slot := &keyCache[keySlot(q, p)]
	if c := slot.Load(); c != nil && c.q == q && c.p == p {
		return c.k
	}
	k := partKeys{rediskeys.PartitionOf(q, p)}
	slot.Store(&cachedKeys{q: q, p: p, k: k})
	return k
}

// keySlot is the partition's slot in keyCache (the id's last bytes are random).
func keySlot(q ids.ID, p int) int {
	return int((binary.LittleEndian.Uint64(q[8:]) ^ uint64(p)*0x9e3779b97f4a7c15) % uint64(len(keyCache)))
}

// cachedKeys is one partition's names in keyCache.
type cachedKeys struct {
	q ids.ID
	p int
	k partKeys
}

// keyCache holds the names of up to 1,024 partitions (about 1.5 KiB each).
var keyCache [1024]atomic.Pointer[cachedKeys]

// messages are the keys holding messages (the settle scripts' first five keys).
func (k partKeys) messages() []string {
	return []string{k.Scheduled, k.InFlight, k.Messages, k.LegacyStates, k.Expiry}
}

// purged are the keys a purge removes (after Visible and VisibleTaken, which purge_partition.lua
// needs first):
// messages and, on fifo queues, their groups (not the outbox, whose messages have left the
// queue, nor dedup outcomes, which outlive a purge, nor the list head position).
func (k partKeys) purged() []string {
	return []string{k.Visible, k.VisibleTaken, k.Scheduled, k.InFlight, k.Messages, k.LegacyStates, k.Expiry,
		k.GroupMessages, k.GroupMemberOf, k.GroupsAvailable, k.GroupsLocked, k.GroupLastSeq, k.GroupsParked,
		k.ConflationKeys, k.ConflationKeyOf}
}

// all are every long-lived key of the partition.
func (k partKeys) all() []string {
	return []string{k.Visible, k.VisibleTaken, k.Scheduled, k.InFlight, k.Messages, k.LegacyStates, k.Expiry,
		k.DeadLetterOutbox, k.MoveOutbox, k.MoveTasks,
		k.GroupMessages, k.GroupMemberOf, k.GroupsAvailable, k.GroupsLocked, k.GroupLastSeq, k.GroupsParked,
		k.DedupOutcomes, k.GroupBindings, k.ConsumerBindings, k.ConflationKeys, k.ConflationKeyOf, k.BarrierFence}
}

// binds are the keys of a fifo partition's group bindings.
func (k partKeys) binds() []string { return []string{k.GroupBindings, k.ConsumerBindings} }

// fifo are the first keys of the fifo scripts: messages, then the group keys gm, gi, gs, gl.
func (k partKeys) fifo() []string {
	return append(k.messages(), k.GroupMessages, k.GroupMemberOf, k.GroupsAvailable, k.GroupsLocked)
}

// projectBytesKey and projectReservationsKey are a project's stored-bytes keys.
func projectBytesKey(p ids.ID) string        { return rediskeys.ProjectBytes(p) }
func projectReservationsKey(p ids.ID) string { return rediskeys.ProjectReservations(p) }

// activeKey is the set of queues with background work.
const activeKey = rediskeys.ActiveQueues

func partitionsKey(q ids.ID) string { return rediskeys.Partitions(q) }
func purgeKey(q ids.ID) string      { return rediskeys.Purge(q) }

// Barrier keys.
func holdKey(q ids.ID) string      { return rediskeys.Hold(q) }
func holdBytesKey(q ids.ID) string { return rediskeys.HoldBytes(q) }

// barrierPrefix marks a wake-up payload that tells every replica a barrier is pending.
const barrierPrefix = "b:"

// Consumer keys.
func consumerRegistryKey(q ids.ID) string { return rediskeys.ConsumerRegistry(q) }
func consumerNamesKey(q ids.ID) string    { return rediskeys.ConsumerNames(q) }
func consumerHoldKey(q ids.ID, t engine.ConsumerTag) string {
	return rediskeys.ConsumerHold(q, uint64(t))
}

// Fifo queue-level keys.
func seqKey(q ids.ID) string                 { return rediskeys.Seq(q) }
func groupMapKey(q ids.ID) string            { return rediskeys.GroupMap(q) }
func dedupKey(q ids.ID, dedup string) string { return rediskeys.Dedup(q, dedup) }

// topicCopiedKey is queue q's hash of topic bindings' high-water marks (copy.go).
func topicCopiedKey(q ids.ID) string { return rediskeys.TopicCopied(q) }
