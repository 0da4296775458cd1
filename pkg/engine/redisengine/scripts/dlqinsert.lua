-- dlqinsert: insert a dead-lettered message into a dead-letter queue partition, idempotently
-- (a message id already present is left alone, so a retried move does not duplicate it).
-- KEYS: 1 r, 2 m, 3 s, 4 x (of the dead-letter queue partition), 5 B, [6 P] (stored bytes)
-- ARGV: 1 id, 2 payload (with its dead-letter info), 3 at ms (visible from then),
--       4 expiresAt ms, 5 sentAt ms, 6 wake channel, 7 wake payload, 8 project id
-- Returns: 1 inserted, 0 already there.
local v = mvalue(fmt_state(0, 0, tonumber(ARGV[4]), tonumber(ARGV[5])), ARGV[2])
if redis.call('HSETNX', KEYS[2], ARGV[1], v) == 0 then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
bkeys(5)
PJ = ARGV[8]
bchg(psize(ARGV[2]), 0)
redis.call('PUBLISH', ARGV[6], ARGV[7])
return 1
