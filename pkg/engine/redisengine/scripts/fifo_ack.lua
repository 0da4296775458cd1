-- fifo_ack: delete the messages of valid deliveries of a fifo partition and reschedule their
-- groups (a group whose last in-flight message goes becomes available to receives).
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 gm, 7 gi, 8 gs, 9 gl, 10 gb, 11 gx (group bindings),
--       12 B, [13 P] (stored bytes)
-- ARGV: 1 now ms, 2 wake channel, 3 wake payload; then 2 per delivery: id, attempt
-- Returns: one code per delivery: 1 deleted, 0 stale. Publishes when a group became available.
-- A bound group's binding is refreshed by the ack, or ended by an endGroup message (prelude:
-- bsettle).
local now = tonumber(ARGV[1])
local K, G = fkeys()
bkeys(12)
local res, ok, skip, groups, ends = {}, {}, {}, {}, {}
local gone = 0
for i = 4, #ARGV, 2 do
  local id = ARGV[i]
  local a, ra, ea, sa, v, at = mstate(KEYS[3], KEYS[4], id)
  if a and a == tonumber(ARGV[i + 1]) and ea > now then
    res[#res + 1] = 1
    if not skip[id] then
      skip[id] = true
      gone = gone + psize(v, at)
      local prefix = redis.call('HGET', KEYS[7], id)
      ok[#ok + 1] = {id, prefix}
      if prefix then
        local g = gid_of(prefix)
        groups[g] = (groups[g] or 0) + 1
        ends[g] = ends[g] or pend(v, at)
      end
    end
  else
    res[#res + 1] = 0
  end
end
local plan = gplan(G, groups, skip, {}, now)
for _, e in ipairs(ok) do fdel(K, G, e[1], e[2]) end
bchg(-gone, 0)
bsettle(KEYS[10], KEYS[11], ends, now)
if gapply(G, plan, now) then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return res
