-- fifo_purge_group: delete up to limit messages of one group of a fifo partition, those sent before
-- the purge (sequence number below a bound), and reschedule the group.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 gm, 7 gi, 8 gs, 9 gl, 10 B, [11 P] (stored bytes)
-- ARGV: 1 group id, 2 exclusive upper bound ("<g>\0" .. 16 hex digits of the first sequence
--       number to keep), 3 limit, 4 now ms
-- Returns: the number deleted (limit means more may remain).
local K, G = fkeys()
local g = ARGV[1]
local mem = redis.call('ZRANGEBYLEX', G.gm, glo(g), '(' .. ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
-- The deleted ones are the group's first #mem members; its next ones decide its schedule.
local pl = gplace(gread(G, g, #mem, WIN), {}, {})
bkeys(10)
local gone = 0
for _, m in ipairs(mem) do
  local a, _, _, _, v, at = mstate(KEYS[3], KEYS[4], string.sub(m, -16))
  if a then gone = gone + psize(v, at) end
end
bchg(-gone, 0)
for _, m in ipairs(mem) do fdel(K, G, string.sub(m, -16), string.sub(m, 1, #m - 16)) end
gset(G, g, pl, tonumber(ARGV[4]))
return #mem
