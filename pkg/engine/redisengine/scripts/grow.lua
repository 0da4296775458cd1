-- grow: add one partition to a queue, at most once per interval, up to a cap.
-- KEYS: 1 the queue's partitions hash (fields n = count, absent means 1; at = last growth ms)
-- ARGV: 1 the count the caller saw, 2 now ms, 3 cap, 4 interval ms
-- Returns: the partition count after the call. No growth while a barrier is pending (field
-- bon, barrier_hold.lua): its fences cover the partitions that existed when it was sent.
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '1')
local at = tonumber(redis.call('HGET', KEYS[1], 'at') or '0')
local now = tonumber(ARGV[2])
if redis.call('HEXISTS', KEYS[1], 'bon') == 1 then return n end
if n ~= tonumber(ARGV[1]) or n >= tonumber(ARGV[3]) or now - at < tonumber(ARGV[4]) then
  return n
end
redis.call('HSET', KEYS[1], 'n', n + 1, 'at', ARGV[2])
return n + 1
