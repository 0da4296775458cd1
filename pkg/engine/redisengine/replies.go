package redisengine

// The replies of the scripts that mean something other than success. Each script's header
// (scripts/*.lua, "Returns") says what it answers; these are the names the Go code compares
// them by. A code means something only for its own script: -2 is a fenced partition to
// send.lua but a failed expectation to keyed_send.lua.

// send.lua answers a bare number: the partition's sends this second, or one of these.
const (
	// sendOverQuota: the batch would take the project past maxStoredBytes; nothing stored.
	sendOverQuota int64 = -1
	// sendFenced: the partition is fenced for a pending barrier; nothing stored, the engine
	// sends to the barrier hold instead.
	sendFenced int64 = -2
)

// keyed_send.lua answers {rate, {...}}, or one of these alone; nothing changed in any of them.
const (
	// keyedOverQuota: the send would take the project past maxStoredBytes.
	keyedOverQuota int64 = -1
	// keyedExpectFailed: an expectation (what keyed_read.lua saw) no longer holds; the engine
	// plans the partition's messages again.
	keyedExpectFailed int64 = -2
	// keyedFenced: the partition is fenced for a pending barrier; the send goes to the
	// barrier hold, unconflated.
	keyedFenced int64 = -3
)

// barrier_hold.lua answers {status, generation, partition count}; its status is 1 held or one of these.
const (
	// holdOff: barrier mode is off (mode "m"); nothing stored.
	holdOff int64 = 0
	// holdOverQuota: the batch would take the project past maxStoredBytes; nothing stored.
	holdOverQuota int64 = -1
)

// insertFenced is insert.lua's answer when the partition is fenced for a pending
// barrier: nothing stored, the engine puts the message in the barrier hold instead (1 is
// inserted, 0 already there).
const insertFenced int64 = -2

// topic_publish.lua answers {last sequence, {...}}, or one of these alone; nothing written.
const (
	// publishOverQuota: the publish would take the project past maxStoredBytes.
	publishOverQuota int64 = -1
	// publishConflict: an expectation or a plan failed (a concurrent publish got there first).
	publishConflict int64 = -2
)

// copyFenced is copy.lua's answer, alone, when the partition is fenced for a barrier
// (nothing done).
const copyFenced int64 = -2

// fifo_send.lua answers {rate, {one code per message}} with these codes, or fifoOverQuota alone.
const (
	// fifoOverQuota: the messages would take the project past maxStoredBytes; nothing stored.
	fifoOverQuota int64 = -1
	// fifoStored: stored, or already there (a retried insert, or stored before under its
	// dedup reservation).
	fifoStored int64 = 1
	// fifoReservationFenced: refused, its dedup reservation was fenced (fifo_verify_dedup.lua) by a
	// sender that found it pending.
	fifoReservationFenced int64 = 2
	// fifoSequenceBehind: refused, its group already holds a higher sequence number here;
	// or, for a message brought back, its group's parking no longer names it.
	fifoSequenceBehind int64 = 3
)

// loneCode is the code of a reply that is a code alone ({code}); ok is false for any other
// reply.
func loneCode(vals []any) (code int64, ok bool) {
	if len(vals) != 1 {
		return 0, false
	}
	code, ok = vals[0].(int64)
	return code, ok
}
