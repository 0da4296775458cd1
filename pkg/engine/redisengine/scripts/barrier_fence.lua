-- barrier_fence: fence one partition of a standard queue for barrier generation g, and count what it
-- holds. A fenced partition refuses sends (send.lua answers -2), which then go to the barrier
-- hold (barrier_hold.lua): so once every partition is fenced, each message a partition holds was
-- accepted before the pending barrier.
-- KEYS: 1 bf (the partition's fence), 2 l, 3 m
-- ARGV: 1 g
-- Returns: the messages the partition holds (never-received list l and every other message in
-- m), expired ones not yet swept included.
local g = tonumber(ARGV[1])
if tonumber(redis.call('GET', KEYS[1]) or '0') < g then redis.call('SET', KEYS[1], ARGV[1]) end
return redis.call('LLEN', KEYS[2]) + redis.call('HLEN', KEYS[3])
