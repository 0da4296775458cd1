-- barrier_hold_purge: empty a standard queue's barrier hold (purge and delete): every held message was
-- accepted before the purge. A barrier out in a partition is purged there; forgetting bout
-- lets the next barrier step turn barrier mode off.
-- KEYS: 1 the queue's partitions hash, 2 hl, 3 HB, [4 P (single server)]
-- ARGV: 1 "1" when the queue is deleted (the byte hash then expires after a day, zeroed)
-- Returns: the elements removed.
bkeys(3)
local n = redis.call('LLEN', KEYS[2])
redis.call('UNLINK', KEYS[2])
if n > 0 then redis.call('HINCRBY', KEYS[1], 'bh', n) end
bchg(-tonumber(redis.call('HGET', BK, 'n') or '0'), 0)
redis.call('HDEL', KEYS[1], 'bout')
if ARGV[1] == '1' and redis.call('EXISTS', BK) == 1 then redis.call('PEXPIRE', BK, 86400000) end
return n
