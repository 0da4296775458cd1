-- browselist: one page of a partition's list l (never-received messages in send order),
-- without changing anything.
-- KEYS: 1 l, 2 lh
-- ARGV: 1 first position wanted (positions count every element ever pushed: lh + index),
--       2 limit
-- Returns: {position of the first element returned, element, ...}
local head = tonumber(redis.call('GET', KEYS[2]) or '0')
local from = math.max(tonumber(ARGV[1]) - head, 0)
local items = redis.call('LRANGE', KEYS[1], from, from + tonumber(ARGV[2]) - 1)
local out = {head + from}
for _, v in ipairs(items) do out[#out + 1] = v end
return out
