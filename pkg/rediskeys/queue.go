package rediskeys

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/queueshq/queues/pkg/ids"
)

// Queue engine (pkg/engine/redisengine). Every key of one queue partition shares the hash tag {q:<queue id>:<p>}, so in
// Redis Cluster a partition lives in one slot and each script touches one slot only; the few
// queue-level keys share {q:<queue id>}. Keys are built from ids only, except a fifo dedup
// marker's, which ends in the dedup id after the hash tag.
//
//	{q:<id>:<p>}:l      LIST  never-received messages sent without delay, in send order: each
//	                          element is id (16 raw bytes) + "sentAtMs|expiresAtMs|" + payload,
//	                          so such a message costs one list element and nothing else; their
//	                          expiry times never decrease along the list (send.lua), so expired
//	                          ones are a prefix. Standard queues only. No id is indexed
//	                          here: a delete by id (delete.lua) and a move task's take move
//	                          the elements they look through into m, r and x, where ids are
//	                          found by hash lookup.
//	{q:<id>:<p>}:lh     STRING elements ever removed from the head of l (browse positions)
//	{q:<id>:<p>}:r      ZSET  other never-received messages (delayed ones, dead-letter
//	                          arrivals; fifo queues: all), score = visible-from time (ms)
//	{q:<id>:<p>}:f      ZSET  received messages, score = visibility deadline (ms)
//	{q:<id>:<p>}:m      HASH  message id (16 raw bytes) -> "attempt|receivedAtMs|expiresAtMs|sentAtMs|"
//	                          followed by the payload (see payload.go): state and payload in one
//	                          field, so a message costs one hash entry; a cancelled message's
//	                          attempt field is "attempt:cancels" ('*' appended while the current
//	                          delivery stands cancelled; docs/delivery-options.md#cancel, scripts/cancel.lua)
//	{q:<id>:<p>}:s      HASH  message id -> state, of messages stored before state moved into m
//	                          (their m field is the payload alone, which starts with byte 1): still
//	                          read, removed when such a message is received or deleted
//	{q:<id>:<p>}:x      ZSET  message id -> expiresAt (ms) of the messages in m, for retention
//	{q:<id>:<p>}:o      HASH  dead-letter outbox: message id -> moved message (payload + state)
//	{q:<id>:<p>}:mo     HASH  move-task outbox: message id -> moved message, as in o, with its
//	                          destination queue in the reason's place (move.go)
//	{q:<id>:<p>}:mt     HASH  move task id -> messages it took out of the partition
//	{q:<id>:<p>}:k      HASH  conflation key -> id (16 raw bytes) + version (decimal, raised by
//	                          every merge) of the keyed message that waits never delivered
//	                          (docs/lifecycle.md#conflation-and-delta-publish; keyed_send.lua). Keyed messages never go to l.
//	{q:<id>:<p>}:ki     HASH  message id -> its conflation key, while it waits: the scripts
//	                          that take a message out of the waiting state free its key
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
// Priority (standard queues, docs/delivery-options.md#priority) adds no key: a message of priority
// b > 0 never goes to l, and its r and f scores are its time plus b * 2^43 ms (redisengine
// priorityBand; prelude.lua: BAND), so r and f each hold ten bands, band 0 being priority 0 as
// before. A receive reads the due members of each band present from the highest down, one range
// read each (the highest band present is one ZRANGE -1 -1), so it stays within its scan bound.
// Field pr of the queue's partitions hash {q:<id>}:p is set by the first send of a priority
// above 0; a receive on such a queue of several partitions probes them all first
// (redisengine priority.go, priority_peek.lua).
//
// Barrier messages (standard queues, barrier.go; docs/delivery-options.md#barrier-messages) add,
// per queue:
//
//	{q:<id>}:p          fields of the partitions hash: bon = generation of the pending
//	                          barrier mode (absent: no barrier pending, the default path),
//	                          bg = last generation, bout = "<partition>|<id>" of the barrier
//	                          moved to a partition and not yet left, blk = "<owner>|<until ms>"
//	                          lease of the barrier step (one caller at a time), bh = elements
//	                          ever taken off the head of hl (browse positions, barrier_hold_browse.lua)
//	{q:<id>}:hl         LIST  the hold: from the first pending barrier on, every accepted
//	                          message in acceptance order: kind ("b" barrier, "m" other) + id
//	                          (16 raw bytes) + "sentAtMs|expiresAtMs|visibleAtMs|" + payload
//	{q:<id>}:hb         HASH  stored bytes of the hold (same fields as a partition's b)
//
// and per partition:
//
//	{q:<id>:<p>}:bf     STRING barrier fence: the generation that fenced it; while present,
//	                          send.lua (-2), keyed_send.lua (-3) and insert.lua (-2: dead-letter
//	                          moves and move tasks) refuse, and the message goes to the hold
//
// Consumer backlogs (docs/delivery-options.md#consumers-backlogs-and-fairness, redisengine
// consumers.go) add, per queue:
//
//	{q:<id>}:cr         HASH  consumerId -> "<maxBacklog>|<last seen ms>" of the consumers that
//	                          named themselves on a receive
//	{q:<id>}:cs         ZSET  the same consumerIds, all scores 0 (the list's lexicographic order)
//	{q:<id>}:ch:<tag>   ZSET  what the consumer with that tag (engine.TagOf, 16 hex digits)
//	                          holds: message id (16 raw bytes) + attempt (decimal) -> when it
//	                          lapses (ms: its visibility deadline, or its expiry if sooner);
//	                          "r<token>:<i>" placeholders reserve room for a receive under way
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
//	{q:<id>:<p>}:gp     HASH  parked groups (poison policies park and parkGroup, docs/fifo.md):
//	                          "g" + group id -> "<epoch>|<messages out>|<reason>" while the
//	                          group is parked (it is then in gl with a score of at least 2^50,
//	                          never due), "i" + message id (16 raw bytes) -> "<epoch>|<its gm
//	                          member without the id>" for each of its messages sent to the
//	                          dead-letter queue, which a move brings back to that place;
//	                          "#" -> the last epoch given
//	{q:<id>:<p>}:dd     ZSET  dedup reservation outcomes: "S"+id stored, "A"+id fenced (aborted),
//	                          score = time (ms), trimmed after the dedup window
//	{q:<id>:<p>}:gb     HASH  exclusive group policy (engine/grouppolicy.go): group id ->
//	                          "<consumerId>|<last active ms>", the group's binding to a consumer
//	{q:<id>:<p>}:gx     ZSET  the same bindings as "<consumerId>\x00<group id>" -> last active (ms):
//	                          a consumer's bindings are one lexicographic range (its count
//	                          against maxGroupsPerConsumer), idle ones a score range (pruned by
//	                          receives). A group lives in one partition, so its binding does.
//
// and, per queue:
//
//	{q:<id>}:seq        STRING the queue's last sequence number
//	{q:<id>}:groups     HASH  group id -> "<partition>|<last seq allocated>|<at ms>": where the
//	                          group lives while it has messages (removed by Sweep once empty)
//	{q:<id>}:d:<dedup>  STRING dedup marker: message id (16 bytes) + "<partition>|<accepted at ms>|<seq>"
//	                          (its latest reservation's sequence number; absent in older markers),
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
// on Cluster the engine folds it right after (bytes_fold.lua, idempotent by version) and Sweep
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

// Partition are the keys of one queue partition (the layout above), each field named for
// what its key holds; the comment gives the key's suffix after the hash tag, which is what
// is stored and must not change.
type Partition struct {
	Tag              string // {q:<id>:<p>}, the hash tag every key below starts with
	Visible          string // :l, never-received messages sent without delay (standard queues)
	VisibleTaken     string // :lh, elements ever removed from the head of Visible
	Scheduled        string // :r, other never-received messages by visible-from time
	InFlight         string // :f, received messages by visibility deadline
	Messages         string // :m, message id -> state and payload
	LegacyStates     string // :s, states of messages stored before state moved into Messages
	Expiry           string // :x, message id -> expiresAt, for retention
	DeadLetterOutbox string // :o, messages leaving for the dead-letter queue
	MoveOutbox       string // :mo, messages leaving with a move task
	MoveTasks        string // :mt, move task id -> messages it took out
	ConflationKeys   string // :k, conflation key -> the keyed message that waits
	ConflationKeyOf  string // :ki, message id -> its conflation key
	GroupMessages    string // :gm, fifo: every message by group and sequence
	GroupMemberOf    string // :gi, fifo: message id -> its GroupMessages member
	GroupsAvailable  string // :gs, fifo: available groups by their head's sequence number
	GroupsLocked     string // :gl, fifo: locked or delayed groups by when they become available
	GroupLastSeq     string // :gt, fifo: group id -> highest sequence number stored here
	GroupsParked     string // :gp, fifo: parked groups and their messages sent away
	DedupOutcomes    string // :dd, fifo: dedup reservation outcomes
	GroupBindings    string // :gb, exclusive group policy: group id -> its consumer
	ConsumerBindings string // :gx, the same bindings by consumer
	Bytes            string // :b, stored bytes of the partition
	WaitMarker       string // :w, written before WAIT when sends wait for replicas
	BarrierFence     string // :bf, barrier fence: the generation that fenced the partition
}

// PartitionOf returns the keys of partition p of queue q.
func PartitionOf(q ids.ID, p int) Partition {
	tag := "{q:" + q.String() + ":" + strconv.Itoa(p) + "}"
	return Partition{
		Tag:     tag,
		Visible: tag + ":l", VisibleTaken: tag + ":lh",
		Scheduled: tag + ":r", InFlight: tag + ":f", Messages: tag + ":m", LegacyStates: tag + ":s",
		Expiry: tag + ":x", DeadLetterOutbox: tag + ":o",
		MoveOutbox: tag + ":mo", MoveTasks: tag + ":mt",
		ConflationKeys: tag + ":k", ConflationKeyOf: tag + ":ki",
		GroupMessages: tag + ":gm", GroupMemberOf: tag + ":gi", GroupsAvailable: tag + ":gs", GroupsLocked: tag + ":gl",
		GroupLastSeq: tag + ":gt", GroupsParked: tag + ":gp",
		DedupOutcomes: tag + ":dd",
		GroupBindings: tag + ":gb", ConsumerBindings: tag + ":gx",
		Bytes:        tag + ":b",
		WaitMarker:   tag + ":w",
		BarrierFence: tag + ":bf",
	}
}

// Rate is the partition's send counter of second sec (unix seconds of the engine's clock).
func (k Partition) Rate(sec int64) string { return k.Tag + ":c:" + strconv.FormatInt(sec, 10) }

// QueueTag is the hash tag of a queue's queue-level keys.
func QueueTag(q ids.ID) string { return "{q:" + q.String() + "}" }

// Partitions is the queue's partitions hash (n, at, and the barrier fields).
func Partitions(q ids.ID) string { return QueueTag(q) + ":p" }

// Purge is the time of the queue's last purge.
func Purge(q ids.ID) string { return QueueTag(q) + ":purge" }

// Hold is the barrier hold of a queue.
func Hold(q ids.ID) string { return QueueTag(q) + ":hl" }

// HoldBytes is the stored bytes of the queue's hold.
func HoldBytes(q ids.ID) string { return QueueTag(q) + ":hb" }

// ConsumerRegistry is the queue's hash of consumers seen (see the layout above).
func ConsumerRegistry(q ids.ID) string { return QueueTag(q) + ":cr" }

// ConsumerNames is the queue's set of consumer ids, in list order.
func ConsumerNames(q ids.ID) string { return QueueTag(q) + ":cs" }

// ConsumerHold is what the consumer with tag holds of the queue (tag: 16 hex digits).
func ConsumerHold(q ids.ID, tag uint64) string {
	return QueueTag(q) + ":ch:" + fmt.Sprintf("%016x", tag)
}

// Seq is a fifo queue's last sequence number.
func Seq(q ids.ID) string { return QueueTag(q) + ":seq" }

// GroupMap maps a fifo queue's groups to their partitions.
func GroupMap(q ids.ID) string { return QueueTag(q) + ":groups" }

// Dedup is a fifo queue's dedup marker of one dedup id.
func Dedup(q ids.ID, dedup string) string { return QueueTag(q) + ":d:" + dedup }

// ProjectBytes is a project's stored bytes.
func ProjectBytes(p ids.ID) string { return "{t:" + p.String() + "}:b" }

// ProjectReservations is a project's send reservations (Cluster).
func ProjectReservations(p ids.ID) string { return "{t:" + p.String() + "}:r" }

// ActiveQueues is the set of queues with background work.
const ActiveQueues = "{active}:queues"

// WakeChannel is the engine's default pub/sub channel of wake-ups (a send names its queue, so
// a long poll parked on another replica returns at once). A wake-up's payload is the queue id,
// or "b:" and the queue id (a barrier is pending), or WakePayload's form: the queue id, '|',
// and the comma-separated hex digests of the attribute pairs of what the send brought
// (pkg/filter: WakeDigests), so only parked receives whose filter could match it wake.
const WakeChannel = "queues:wake"

// WakePayload is a send's wake-up naming its attribute digests (nil: none named, the bare
// queue id, which wakes every receive parked on q).
func WakePayload(q ids.ID, digests []uint64) string {
	if digests == nil {
		return q.String()
	}
	b := make([]byte, 0, 37+17*len(digests))
	b = append(b, q.String()...)
	b = append(b, '|')
	for i, d := range digests {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, d, 16)
	}
	return string(b)
}

// ParseWake reads a wake-up payload (without the barrier prefix): the queue id and the
// digests it names (nil: none, every receive parked on the queue wakes).
func ParseWake(payload string) (ids.ID, []uint64, error) {
	qs, list, named := strings.Cut(payload, "|")
	q, err := ids.ParseUUID(qs)
	if err != nil || !named {
		return q, nil, err
	}
	digests := []uint64{}
	for h := range strings.SplitSeq(list, ",") {
		if h == "" {
			continue
		}
		d, err := strconv.ParseUint(h, 16, 64)
		if err != nil {
			return q, nil, nil // unreadable: wake everyone rather than no one
		}
		digests = append(digests, d)
	}
	slices.Sort(digests)
	return q, digests, nil
}
