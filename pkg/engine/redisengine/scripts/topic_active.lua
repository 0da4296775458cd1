-- topic_active: the fan-out's work list: the active topics, then the idle ones whose wake time has
-- passed (a topic in both is named once).
-- KEYS: 1 the active-topics zset, 2 the topic-wakes zset
-- ARGV: 1 now ms
-- Returns: topic ids.
local out = redis.call('ZRANGE', KEYS[1], 0, -1)
local seen = {}
for _, id in ipairs(out) do seen[id] = true end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])) do
  if not seen[id] then out[#out + 1] = id end
end
return out
