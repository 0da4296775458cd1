package redisengine

import (
	"strconv"

	"github.com/queueshq/queues/pkg/ids"
)

// Key layout. Every key of one queue partition shares the hash tag {q:<queue id>:<p>}, so in
// Redis Cluster a partition lives in one slot and each script touches one slot only; the few
// queue-level keys share {q:<queue id>}. Keys are built from ids only, never from user input.
//
//	{q:<id>:<p>}:r      ZSET  never-received messages, score = visible-from time (ms)
//	{q:<id>:<p>}:f      ZSET  received messages, score = visibility deadline (ms)
//	{q:<id>:<p>}:m      HASH  message id (16 raw bytes) -> payload (see payload.go)
//	{q:<id>:<p>}:s      HASH  message id -> "attempt|receivedAtMs|expiresAtMs|sentAtMs"
//	{q:<id>:<p>}:x      ZSET  message id -> expiresAt (ms), for retention
//	{q:<id>:<p>}:o      HASH  dead-letter outbox: message id -> moved message (payload + state)
//	{q:<id>:<p>}:c:<s>  STRING sends in second <s> (expires after 2 s)
//	{q:<id>}:p          HASH  n = partition count (absent: 1), at = last growth (ms)
//	{q:<id>}:purge      STRING time of the last purge (ms; expires after the purge interval)

// partKeys are the keys of one queue partition.
type partKeys struct {
	tag              string
	r, f, m, s, x, o string
}

func keysOf(q ids.ID, p int) partKeys {
	tag := "{q:" + q.String() + ":" + strconv.Itoa(p) + "}"
	return partKeys{
		tag: tag,
		r:   tag + ":r",
		f:   tag + ":f",
		m:   tag + ":m",
		s:   tag + ":s",
		x:   tag + ":x",
		o:   tag + ":o",
	}
}

// rate is the send counter of the given second (unix seconds of the engine's clock).
func (k partKeys) rate(sec int64) string { return k.tag + ":c:" + strconv.FormatInt(sec, 10) }

// messages are the keys holding messages (purge removes these, not the outbox).
func (k partKeys) messages() []string { return []string{k.r, k.f, k.m, k.s, k.x} }

// all are every long-lived key of the partition.
func (k partKeys) all() []string { return []string{k.r, k.f, k.m, k.s, k.x, k.o} }

func queueTag(q ids.ID) string      { return "{q:" + q.String() + "}" }
func partitionsKey(q ids.ID) string { return queueTag(q) + ":p" }
func purgeKey(q ids.ID) string      { return queueTag(q) + ":purge" }
