-- barrier_hold_browse: one page of a standard queue's barrier hold (what waits behind a pending barrier,
-- in acceptance order), without changing anything.
-- KEYS: 1 the queue's partitions hash (field bh: elements ever taken off the hold's head,
--       barrier_step.lua, barrier_hold_purge.lua), 2 hl
-- ARGV: 1 first position wanted (positions count every element ever held: bh + index),
--       2 limit, 3 byte cap (elements are read a few at a time until their bytes reach it;
--       filter.MaxScanBytes; 0: none)
-- Returns: {position of the first element returned, element, ...}
local head = tonumber(redis.call('HGET', KEYS[1], 'bh') or '0')
local from = math.max(tonumber(ARGV[1]) - head, 0)
local limit, cap = tonumber(ARGV[2]), tonumber(ARGV[3] or '0') or 0
if cap <= 0 then cap = math.huge end -- none given: the limit alone
local out, read, step = {head + from}, 0, 8
while #out - 1 < limit and read < cap do
  local at = from + #out - 1
  local items = redis.call('LRANGE', KEYS[2], at, math.min(at + step, from + limit) - 1)
  for _, v in ipairs(items) do out[#out + 1] = v; read = read + #v end
  if #items < math.min(step, from + limit - at) then break end
  -- Next, what the cap left holds at the average size so far (at least one element).
  step = math.max(1, math.min(8, math.floor((cap - read) * (#out - 1) / math.max(read, 1))))
end
return out
