-- park: take one of a project's waiting-receive slots, if one is free.
-- KEYS: 1 the project's waiting zset (member: replica:poll, score: the slot's expiry in ms)
-- ARGV: 1 now ms, 2 expiry ms of the new slot, 3 member, 4 the limit
-- Returns: 1 taken, 0 all slots are in use.
-- Slots past their expiry are dropped first: a replica killed while holding slots cannot keep
-- them past the longest wait it could have had.
local now, exp, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= limit then
  return 0
end
redis.call('ZADD', KEYS[1], exp, ARGV[3])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < exp - now then
  redis.call('PEXPIRE', KEYS[1], exp - now)
end
return 1
