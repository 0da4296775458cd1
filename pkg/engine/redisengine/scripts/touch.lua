-- touch: note that queues may hold messages from now on (ActiveQueues); runs at full memory
-- (a dead-letter move's insert calls it).
-- KEYS: 1 the active-queues zset
-- ARGV: 1 now ms; then queue ids
-- Returns: how many were new.
local n = 0
for i = 2, #ARGV do n = n + redis.call('ZADD', KEYS[1], 'GT', ARGV[1], ARGV[i]) end
return n
