-- lease: set how many of a project's waiting-receive slots one replica's lease holds, as many
-- of want as are free.
-- KEYS: 1 the project's waiting zset, 2 the leases hash (park.lua)
-- ARGV: 1 now ms, 2 the lease's expiry ms, 3 member (the replica's lease), 4 the limit,
--       5 want (0 gives the lease back)
-- Returns: the slots the lease now holds, between 0 and want.
-- The lease's own slots are counted as free: asking for fewer gives the rest back.
local now, exp, limit, want = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[5])
local total = waiting(KEYS[1], KEYS[2], now)
local mine = 0
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  mine = tonumber(redis.call('HGET', KEYS[2], ARGV[3]) or '1')
end
local grant = math.max(0, math.min(want, limit - (total - mine)))
if grant == 0 then
  redis.call('ZREM', KEYS[1], ARGV[3])
  redis.call('HDEL', KEYS[2], ARGV[3])
  return 0
end
redis.call('ZADD', KEYS[1], exp, ARGV[3])
redis.call('HSET', KEYS[2], ARGV[3], grant)
keep(KEYS[1], KEYS[2], now, exp)
return grant
