-- retire: drop a queue found empty from the active-queues zset, unless a send named it since
-- the caller read its score.
-- KEYS: 1 the active-queues zset
-- ARGV: 1 queue id, 2 the score the caller read
-- Returns: 1 removed, 0 kept.
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s or tonumber(s) ~= tonumber(ARGV[2]) then return 0 end
return redis.call('ZREM', KEYS[1], ARGV[1])
