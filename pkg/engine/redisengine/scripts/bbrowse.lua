-- bbrowse: one page of a standard queue's barrier hold (what waits behind a pending barrier,
-- in acceptance order), without changing anything.
-- KEYS: 1 the queue's partitions hash (field bh: elements ever taken off the hold's head,
--       bstep.lua, bpurge.lua), 2 hl
-- ARGV: 1 first position wanted (positions count every element ever held: bh + index),
--       2 limit
-- Returns: {position of the first element returned, element, ...}
local head = tonumber(redis.call('HGET', KEYS[1], 'bh') or '0')
local from = math.max(tonumber(ARGV[1]) - head, 0)
local items = redis.call('LRANGE', KEYS[2], from, from + tonumber(ARGV[2]) - 1)
local out = {head + from}
for _, v in ipairs(items) do out[#out + 1] = v end
return out
