-- tidle: drop a topic from the active topics unless a publish named it since before.
-- KEYS: 1 the active-topics zset
-- ARGV: 1 topic id, 2 before ms (a score at or after it keeps the topic)
-- Returns: 1 removed, 0 kept.
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s or tonumber(s) >= tonumber(ARGV[2]) then return 0 end
return redis.call('ZREM', KEYS[1], ARGV[1])
