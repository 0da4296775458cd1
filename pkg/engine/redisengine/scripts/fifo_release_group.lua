-- fifo_release_group: end the parking of a group of a fifo partition (prelude.lua: gpark, gunpark): its
-- messages are served again from its head. The records of its messages still out stay behind,
-- inert (their epoch is no longer the group's): such a message, brought back, is stored as a
-- new one (fifo_send.lua).
-- KEYS: 1 r, 2 f, 3 gm, 4 gs, 5 gl, 6 gp
-- ARGV: 1 now ms, 2 group id, 3 wake channel, 4 wake payload
-- Returns: 1 released, 2 the group is not parked, 0 the partition knows no such group.
-- Publishes when the group became available.
local now = tonumber(ARGV[1])
local G = {r = KEYS[1], f = KEYS[2], gm = KEYS[3], gs = KEYS[4], gl = KEYS[5], gp = KEYS[6]}
local g = ARGV[2]
if not gparked(G, g) then
  if #redis.call('ZRANGEBYLEX', G.gm, glo(g), ghi(g), 'LIMIT', 0, 1) > 0 then return 2 end
  return 0
end
if gunpark(G, g, now) then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return 1
