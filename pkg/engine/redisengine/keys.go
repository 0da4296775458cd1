package redisengine

import (
	"strconv"

	"github.com/queueshq/queues/pkg/ids"
)

// Key layout. Every key of one queue partition shares the hash tag {q:<queue id>:<p>}, so in
// Redis Cluster a partition lives in one slot and each script touches one slot only; the few
// queue-level keys share {q:<queue id>}. Keys are built from ids only, except a fifo dedup
// marker's, which ends in the dedup id after the hash tag.
//
//	{q:<id>:<p>}:l      LIST  never-received messages sent without delay, in send order: each
//	                          element is id (16 raw bytes) + "sentAtMs|expiresAtMs|" + payload,
//	                          so such a message costs one list element and nothing else; their
//	                          expiry times never decrease along the list (send.lua), so expired
//	                          ones are a prefix. Standard queues only.
//	{q:<id>:<p>}:lh     STRING elements ever removed from the head of l (browse positions)
//	{q:<id>:<p>}:r      ZSET  other never-received messages (delayed ones, dead-letter
//	                          arrivals; fifo queues: all), score = visible-from time (ms)
//	{q:<id>:<p>}:f      ZSET  received messages, score = visibility deadline (ms)
//	{q:<id>:<p>}:m      HASH  message id (16 raw bytes) -> "attempt|receivedAtMs|expiresAtMs|sentAtMs|"
//	                          followed by the payload (see payload.go): state and payload in one
//	                          field, so a message costs one hash entry
//	{q:<id>:<p>}:s      HASH  message id -> state, of messages stored before state moved into m
//	                          (their m field is the payload alone, which starts with byte 1): still
//	                          read, removed when such a message is received or deleted
//	{q:<id>:<p>}:x      ZSET  message id -> expiresAt (ms) of the messages in m, for retention
//	{q:<id>:<p>}:o      HASH  dead-letter outbox: message id -> moved message (payload + state)
//	{q:<id>:<p>}:c:<s>  STRING sends in second <s> (expires after 2 s)
//	{q:<id>:<p>}:b      HASH  stored bytes (engine.PayloadBytes) of the partition: n of its
//	                          messages, o of its outbox, v a version raised by every change,
//	                          pj the owning project; moved by every script that stores or
//	                          removes payload, in the same step (prelude.lua: bchg)
//	{q:<id>:<p>}:w      STRING written before WAIT when sends wait for replicas (replicas.go;
//	                          expires after a minute)
//	{q:<id>}:p          HASH  n = partition count (absent: 1), at = last growth (ms)
//	{q:<id>}:purge      STRING time of the last purge (ms; expires after the purge interval)
//
// Fifo queues use the same per-message keys (so counts, browse, retention and the outbox work
// unchanged) and add, per partition:
//
//	{q:<id>:<p>}:gm     ZSET  every message by group, all scores 0, member
//	                          group id + "\x00" + 16 hex digits of the sequence number + message id
//	                          (16 raw bytes): a group's messages are one lexicographic range
//	                          ["<g>\x00", "<g>\x01"), in send order (group ids are "!".."~")
//	{q:<id>:<p>}:gi     HASH  message id -> its gm member without the id ("<g>\x00<seq hex>")
//	{q:<id>:<p>}:gs     ZSET  available groups -> their head's sequence number (oldest first)
//	{q:<id>:<p>}:gl     ZSET  locked or delayed groups -> when they become available (ms): the
//	                          latest visibility deadline of their received messages (a batch in
//	                          flight locks its group until then), or their head's visible-from
//	                          time; every non-empty group is in exactly one of gs and gl
//	{q:<id>:<p>}:gt     HASH  group id -> highest sequence number stored here (refuses a late,
//	                          lower one, so a group's order is its sequence order)
//	{q:<id>:<p>}:dd     ZSET  dedup reservation outcomes: "S"+id stored, "A"+id fenced (aborted),
//	                          score = time (ms), trimmed after the dedup window
//
// and, per queue:
//
//	{q:<id>}:seq        STRING the queue's last sequence number
//	{q:<id>}:groups     HASH  group id -> "<partition>|<last seq allocated>|<at ms>": where the
//	                          group lives while it has messages (removed by Sweep once empty)
//	{q:<id>}:d:<dedup>  STRING dedup marker: message id (16 bytes) + "<partition>|<accepted at ms>",
//	                          PX = dedup window + a minute; passed in KEYS like every key. The
//	                          dedup id (printable ASCII) follows the hash tag, so braces in it
//	                          cannot move the key to another slot.
//
// and, per project (its own hash tag: on Redis Cluster no partition script can reach it):
//
//	{t:<project>}:b     HASH  t = the project's stored bytes; per partition (field: its b key)
//	                          "<version>|<bytes>" last folded in; rs = bytes reserved by sends
//	                          in progress (Cluster only)
//	{t:<project>}:r     ZSET  send reservations "<token>|<bytes>" by expiry (ms; Cluster only)
//
// On a single server the partition scripts fold their change into {t:<project>}:b themselves;
// on Cluster the engine folds it right after (bfold.lua, idempotent by version) and Sweep
// folds every partition it visits, which finishes what a crash interrupted.
//
// and one for the whole deployment (its own hash tag):
//
//	{active}:queues     ZSET  queues that may hold messages -> when a send or dead-letter move
//	                          last named them (ms); Sweep removes a queue it finds empty and not
//	                          named for a while (ActiveQueues)
//
// No key name is built inside a script: group ids live in members and fields, never in key
// names, so purge and delete remove a fixed set of keys.

// partKeys are the keys of one queue partition.
type partKeys struct {
	tag              string
	l, lh            string
	r, f, m, s, x, o string
	gm, gi, gs, gl   string // fifo
	gt               string
	dd               string // fifo dedup reservation outcomes
	b                string // stored bytes
	w                string // the write WAIT follows (replicas.go)
}

func keysOf(q ids.ID, p int) partKeys {
	tag := "{q:" + q.String() + ":" + strconv.Itoa(p) + "}"
	return partKeys{
		tag: tag,
		l:   tag + ":l",
		lh:  tag + ":lh",
		r:   tag + ":r",
		f:   tag + ":f",
		m:   tag + ":m",
		s:   tag + ":s",
		x:   tag + ":x",
		o:   tag + ":o",
		gm:  tag + ":gm",
		gi:  tag + ":gi",
		gs:  tag + ":gs",
		gl:  tag + ":gl",
		gt:  tag + ":gt",
		dd:  tag + ":dd",
		b:   tag + ":b",
		w:   tag + ":w",
	}
}

// rate is the send counter of the given second (unix seconds of the engine's clock).
func (k partKeys) rate(sec int64) string { return k.tag + ":c:" + strconv.FormatInt(sec, 10) }

// messages are the keys holding messages (the settle scripts' first five keys).
func (k partKeys) messages() []string { return []string{k.r, k.f, k.m, k.s, k.x} }

// purged are the keys a purge removes (after l and lh, which purgepart.lua needs first):
// messages and, on fifo queues, their groups (not the outbox, whose messages have left the
// queue, nor dedup outcomes, which outlive a purge, nor the list head position).
func (k partKeys) purged() []string {
	return []string{k.l, k.lh, k.r, k.f, k.m, k.s, k.x, k.gm, k.gi, k.gs, k.gl, k.gt}
}

// all are every long-lived key of the partition.
func (k partKeys) all() []string {
	return []string{k.l, k.lh, k.r, k.f, k.m, k.s, k.x, k.o, k.gm, k.gi, k.gs, k.gl, k.gt, k.dd}
}

// fifo are the first keys of the fifo scripts: messages, then gm, gi, gs, gl.
func (k partKeys) fifo() []string { return []string{k.r, k.f, k.m, k.s, k.x, k.gm, k.gi, k.gs, k.gl} }

// projectBytesKey and projectReservationsKey are a project's stored-bytes keys.
func projectBytesKey(p ids.ID) string        { return "{t:" + p.String() + "}:b" }
func projectReservationsKey(p ids.ID) string { return "{t:" + p.String() + "}:r" }

// activeKey is the set of queues with background work.
const activeKey = "{active}:queues"

func queueTag(q ids.ID) string      { return "{q:" + q.String() + "}" }
func partitionsKey(q ids.ID) string { return queueTag(q) + ":p" }
func purgeKey(q ids.ID) string      { return queueTag(q) + ":purge" }

// Fifo queue-level keys (see the layout above).
func seqKey(q ids.ID) string      { return queueTag(q) + ":seq" }
func groupMapKey(q ids.ID) string { return queueTag(q) + ":groups" }
func dedupKey(q ids.ID, dedup string) string {
	return queueTag(q) + ":d:" + dedup
}
