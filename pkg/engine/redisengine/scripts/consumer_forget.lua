-- consumer_forget: forget consumers not seen since ARGV[2] whose holdings are empty (after dropping
-- what lapsed by ARGV[1]); a stale consumer that still holds messages is kept, so its bound
-- and holdings stay exact until they lapse.
-- KEYS: 1 the queue's consumer registry (HASH), 2 the queue's consumer names (ZSET), then one
--       holdings key per consumer of ARGV
-- ARGV: 1 now ms, 2 seen-since ms, then the consumerIds, in the order of their KEYS
-- Returns: how many were forgotten
local now = tonumber(ARGV[1])
local since = tonumber(ARGV[2])
local gone = 0
for i = 3, #ARGV do
  local h = KEYS[i]
  redis.call('ZREMRANGEBYSCORE', h, '-inf', now)
  local v = redis.call('HGET', KEYS[1], ARGV[i])
  local seen = v and tonumber(string.match(v, '|(%d+)$')) or 0
  if seen <= since and redis.call('ZCARD', h) == 0 then
    redis.call('HDEL', KEYS[1], ARGV[i])
    redis.call('ZREM', KEYS[2], ARGV[i])
    redis.call('DEL', h)
    gone = gone + 1
  end
end
return gone
