-- fdeadletter: a consumer dead-letters valid deliveries of a fifo partition: each message
-- moves to the outbox (with a redrive policy) or is deleted, and its group is rescheduled.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 gm, 7 gi, 8 gs, 9 gl, 10 o, 11 gb, 12 gx (group
--       bindings: refreshed, or ended by an endGroup message, prelude: bsettle), 13 B,
--       [14 P] (stored bytes)
-- ARGV: 1 now ms, 2 "1" with a redrive policy else "0", 3 wake channel, 4 wake payload;
--       then 3 per delivery: id, attempt, reason
-- Returns: {{one code per delivery: 1 done, 0 stale}, {id, outbox value, ...}}
local now = tonumber(ARGV[1])
local redrive = ARGV[2] == '1'
local K, G = fkeys()
bkeys(13)
local res, ok, skip, groups, ends = {}, {}, {}, {}, {}
local moved = 0
for i = 5, #ARGV, 3 do
  local id = ARGV[i]
  local a, ra, ea, sa, p = mread(KEYS[3], KEYS[4], id)
  local payload = false
  if a and a == tonumber(ARGV[i + 1]) and ea > now and not skip[id] then payload = p end
  if payload then
    res[#res + 1] = 1
    skip[id] = true
    moved = moved + psize(payload)
    local prefix = redis.call('HGET', KEYS[7], id)
    ok[#ok + 1] = {id, outbox_value(now, sa, ARGV[i + 2], payload, a), prefix}
    if prefix then
      local g = gid_of(prefix)
      groups[g] = (groups[g] or 0) + 1
      ends[g] = ends[g] or pend(payload)
    end
  else
    res[#res + 1] = 0
  end
end
local plan = gplan(G, groups, skip, {}, now)
local out = {}
for _, e in ipairs(ok) do
  if redrive then
    redis.call('HSET', KEYS[10], e[1], e[2])
    out[#out + 1] = e[1]; out[#out + 1] = e[2]
  end
  fdel(K, G, e[1], e[3])
end
if redrive then bchg(-moved, moved) else bchg(-moved, 0) end
bsettle(KEYS[11], KEYS[12], ends, now)
if gapply(G, plan, now) then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return {res, out}
