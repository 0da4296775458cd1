-- consumer_count: how many messages each consumer holds now (lapsed holdings dropped first).
-- KEYS: one holdings key per consumer (ZSET member -> lapse ms)
-- ARGV: 1 now ms
-- Returns: the counts, in the order of KEYS
local now = tonumber(ARGV[1])
local out = {}
for i, h in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', h, '-inf', now)
  out[i] = redis.call('ZCARD', h)
end
return out
