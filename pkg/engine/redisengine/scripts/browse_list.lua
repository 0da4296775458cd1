-- browse_list: one page of a partition's list l (never-received messages in send order),
-- without changing anything.
-- KEYS: 1 l, 2 lh
-- ARGV: 1 first position wanted (positions count every element ever pushed: lh + index),
--       2 limit, 3 byte budget (0: none), 4 "1" when the page already holds a message (else
--       the first element always fits)
-- Returns: {position of the first element returned, cut, element, ...}: cut is 1 when the
-- next element would have taken the reply past the budget (the reply ends before it), else 0.
-- Elements are read a few at a time, so Redis holds no more than the budget either.
local head = tonumber(redis.call('GET', KEYS[2]) or '0')
local from = math.max(tonumber(ARGV[1]) - head, 0)
local limit, budget, held = tonumber(ARGV[2]), tonumber(ARGV[3] or '0'), ARGV[4] == '1'
local out = {head + from, 0}
if budget <= 0 then
  for _, v in ipairs(redis.call('LRANGE', KEYS[1], from, from + limit - 1)) do out[#out + 1] = v end
  return out
end
local used, n, chunk = 0, 0, 16
while n < limit do
  local items = redis.call('LRANGE', KEYS[1], from + n, from + math.min(n + chunk, limit) - 1)
  for _, v in ipairs(items) do
    if used + #v > budget and (held or n > 0) then
      out[2] = 1
      return out
    end
    used, n = used + #v, n + 1
    out[#out + 1] = v
  end
  if #items < chunk then break end
end
return out
