-- fifo_forget_groups: forget groups that have no message left in a fifo partition: drop their sequence
-- high-water marks. The caller then removes their queue-level mappings (fifo_unmap_groups).
-- A parked group (prelude.lua: gpark) is never forgotten, empty or not: the messages a move
-- brings back must find its parking in this partition.
-- KEYS: 1 gm, 2 gt, 3 gl
-- ARGV: group ids
-- Returns: per group 1 when it is empty here (its mark dropped), else 0.
local res, empty = {}, {}
for i, g in ipairs(ARGV) do
  if #redis.call('ZRANGEBYLEX', KEYS[1], glo(g), ghi(g), 'LIMIT', 0, 1) == 0 and not gparked({gl = KEYS[3]}, g) then
    res[i] = 1; empty[#empty + 1] = g
  else
    res[i] = 0
  end
end
if #empty > 0 then redis.call('HDEL', KEYS[2], unpack(empty)) end
return res
