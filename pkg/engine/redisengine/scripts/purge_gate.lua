-- purge_gate: allow one purge per interval per queue, timed by the caller's clock.
-- KEYS: 1 the queue's purge key (holds the last purge's time in ms)
-- ARGV: 1 now ms, 2 interval ms
-- Returns: 0 when the purge may go ahead (and records it), else the ms until it may.
local now = tonumber(ARGV[1])
local iv = tonumber(ARGV[2])
local last = redis.call('GET', KEYS[1])
if last and tonumber(last) + iv > now then return tonumber(last) + iv - now end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 0
