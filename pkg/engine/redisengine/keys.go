package redisengine

import (
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// The key layout is documented, and every name built, in pkg/rediskeys (the registry of every
// Redis name); this file gives the engine's scripts their keys in the order they take them.

// partKeys are the keys of one queue partition.
type partKeys struct {
	tag              string
	l, lh            string
	r, f, m, s, x, o string
	mo, mt           string // move tasks (move.go)
	k, ki            string // conflation keys
	gm, gi, gs, gl   string // fifo
	gt               string
	gp               string // fifo parked groups
	dd               string // fifo dedup reservation outcomes
	gb, gx           string // exclusive group bindings
	b                string // stored bytes
	w                string // the write WAIT follows (replicas.go)
	bf               string // barrier fence (barrier.go)
}

func keysOf(q ids.ID, p int) partKeys {
	k := rediskeys.PartitionOf(q, p)
	return partKeys{
		tag: k.Tag, l: k.L, lh: k.LH,
		r: k.R, f: k.F, m: k.M, s: k.S, x: k.X, o: k.O,
		mo: k.MO, mt: k.MT, k: k.K, ki: k.KI,
		gm: k.GM, gi: k.GI, gs: k.GS, gl: k.GL, gt: k.GT, gp: k.GP, dd: k.DD, gb: k.GB, gx: k.GX,
		b: k.B, w: k.W, bf: k.BF,
	}
}

// rate is the send counter of the given second (unix seconds of the engine's clock).
func (k partKeys) rate(sec int64) string { return rediskeys.Partition{Tag: k.tag}.Rate(sec) }

// messages are the keys holding messages (the settle scripts' first five keys).
func (k partKeys) messages() []string { return []string{k.r, k.f, k.m, k.s, k.x} }

// purged are the keys a purge removes (after l and lh, which purgepart.lua needs first):
// messages and, on fifo queues, their groups (not the outbox, whose messages have left the
// queue, nor dedup outcomes, which outlive a purge, nor the list head position).
func (k partKeys) purged() []string {
	return []string{k.l, k.lh, k.r, k.f, k.m, k.s, k.x, k.gm, k.gi, k.gs, k.gl, k.gt, k.gp, k.k, k.ki}
}

// all are every long-lived key of the partition.
func (k partKeys) all() []string {
	return []string{k.l, k.lh, k.r, k.f, k.m, k.s, k.x, k.o, k.mo, k.mt, k.gm, k.gi, k.gs, k.gl, k.gt, k.gp, k.dd, k.gb, k.gx, k.k, k.ki, k.bf}
}

// binds are the keys of a fifo partition's group bindings.
func (k partKeys) binds() []string { return []string{k.gb, k.gx} }

// fifo are the first keys of the fifo scripts: messages, then gm, gi, gs, gl.
func (k partKeys) fifo() []string { return []string{k.r, k.f, k.m, k.s, k.x, k.gm, k.gi, k.gs, k.gl} }

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
