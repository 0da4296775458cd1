-- insert: insert a message into a standard queue partition, idempotently (a message id
-- already present is left alone, so a retried move does not duplicate it): dead-letter moves
-- into a dead-letter queue, move tasks into their destination, and the barrier step's
-- release of held messages (barrier.go).
-- KEYS: 1 r, 2 m, 3 s, 4 x (of the partition), 5 bf (its barrier fence), 6 B, [7 P] (stored
--       bytes)
-- ARGV: 1 id, 2 payload (with its dead-letter info), 3 at ms (visible from then),
--       4 expiresAt ms, 5 sentAt ms, 6 wake channel, 7 wake payload, 8 project id,
--       9 "1" to insert into a fenced partition (the barrier step, whose messages may be
--       delivered), else "0"
-- Returns: 1 inserted, 0 already there, -2 the partition is fenced for a pending barrier
-- (nothing stored: a message accepted now must wait behind it, so the engine puts it in the
-- barrier hold instead). (Go name, replies.go: -2 insertFenced.)
if ARGV[9] ~= '1' and redis.call('EXISTS', KEYS[5]) == 1 then
  if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 0 end
  return -2
end
-- It arrives at its payload's attempt base (prelude.lua: pbase), so its attempts never repeat.
local b = pbase(ARGV[2])
local v = mvalue(fmt_state(b, 0, tonumber(ARGV[4]), tonumber(ARGV[5])), ARGV[2])
if redis.call('HSETNX', KEYS[2], ARGV[1], v) == 0 then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
bkeys(6)
PJ = ARGV[8]
bchg(psize(ARGV[2]), 0)
redis.call('PUBLISH', ARGV[6], ARGV[7])
return 1
