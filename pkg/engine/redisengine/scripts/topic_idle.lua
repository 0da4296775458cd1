-- topic_idle: take a caught-up topic off the work list and set (or clear) its wake time, in one
-- step: a topic is never off both lists while it has entries the retention will drop.
-- KEYS: 1 the active-topics zset, 2 the topic-wakes zset
-- ARGV: 1 topic id, 2 wake at ms (0: none)
-- Returns: 1.
local at = tonumber(ARGV[2])
if at > 0 then
  redis.call('ZADD', KEYS[2], at, ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
