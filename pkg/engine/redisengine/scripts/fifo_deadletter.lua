-- fifo_deadletter: a consumer dead-letters valid deliveries of a fifo partition: each message
-- moves to the outbox (with a redrive policy) or is deleted, and its group is rescheduled,
-- or parked under a poison policy (prelude.lua: gpark): "park" parks the group of each
-- message dead-lettered; "parkGroup" also sends the group's later messages (whatever their
-- state: a batch in flight goes too, its handles stale) to the outbox behind the first one,
-- in group order.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 gm, 7 gi, 8 gs, 9 gl, 10 o, 11 gb, 12 gx (group
--       bindings: refreshed, or ended by an endGroup message, prelude: bsettle), 13 gp
--       (parked groups), 14 B, [15 P] (stored bytes)
-- ARGV: 1 now ms, 2 "0" without a redrive policy, "1" with one, "p" with one and policy park,
--       "P" with one and policy parkGroup, 3 wake channel, 4 wake payload, 5 the dead-letter
--       reason of the messages that follow a parkGroup dead-letter; then 3 per delivery: id,
--       attempt, reason
-- Returns: {{one code per delivery: 1 done, 0 stale}, {id, outbox value, ...}} (under a park
-- policy the outbox entries of a group are in group order).
local now = tonumber(ARGV[1])
local mode = ARGV[2]
local redrive = mode ~= '0'
local K, G = fkeys()
G.gp = KEYS[13]
bkeys(14)
local res, ok, skip, groups, ends = {}, {}, {}, {}, {}
local moved, gone = 0, 0
local byg = {} -- group -> its entries (park policies)
for i = 6, #ARGV, 3 do
  local id = ARGV[i]
  local a, ra, ea, sa, p = mread(KEYS[3], KEYS[4], id)
  local payload = false
  if a and a == tonumber(ARGV[i + 1]) and ea > now and not skip[id] then payload = p end
  if payload then
    res[#res + 1] = 1
    skip[id] = true
    moved = moved + psize(payload)
    local prefix = redis.call('HGET', KEYS[7], id)
    local e = {id, outbox_value(now, sa, ARGV[i + 2], payload, a), prefix, ARGV[i + 2]}
    ok[#ok + 1] = e
    if prefix then
      local g = gid_of(prefix)
      groups[g] = (groups[g] or 0) + 1
      ends[g] = ends[g] or pend(payload)
      byg[g] = byg[g] or {}
      byg[g][#byg[g] + 1] = e
    end
  else
    res[#res + 1] = 0
  end
end
local drop = {}
if mode == 'p' or mode == 'P' then
  for g, es in pairs(byg) do
    table.sort(es, function(x, y) return x[3] .. x[1] < y[3] .. y[1] end)
    if mode == 'P' then -- the group's later messages follow the first one
      for _, m in ipairs(redis.call('ZRANGEBYLEX', G.gm, '(' .. es[1][3] .. es[1][1], ghi(g))) do
        local id = string.sub(m, -16)
        if not skip[id] then
          skip[id] = true
          local prefix = string.sub(m, 1, #m - 16)
          local a, _, ea, sa, p = mread(KEYS[3], KEYS[4], id)
          if a and ea > now then
            moved = moved + psize(p)
            local e = {id, outbox_value(now, sa, ARGV[5], p, a), prefix, ARGV[5]}
            ok[#ok + 1] = e
            es[#es + 1] = e
          else
            drop[#drop + 1] = {id, prefix}
            if a then gone = gone + psize(p) end
          end
          groups[g] = groups[g] + 1
        end
      end
      table.sort(es, function(x, y) return x[3] .. x[1] < y[3] .. y[1] end)
    end
  end
end
local plan = gplan(G, groups, skip, {}, now)
local out = {}
local function emit(e)
  if redrive then
    redis.call('HSET', KEYS[10], e[1], e[2])
    out[#out + 1] = e[1]; out[#out + 1] = e[2]
  end
  fdel(K, G, e[1], e[3])
end
if mode == 'p' or mode == 'P' then
  for g, es in pairs(byg) do
    local rec = {}
    for _, e in ipairs(es) do
      emit(e)
      rec[#rec + 1] = {e[1], e[3]}
    end
    gpark(G, g, rec, es[1][4])
  end
  for _, e in ipairs(ok) do
    if not e[3] then emit(e) end -- no group entry (not expected): dead-lettered alone
  end
else
  for _, e in ipairs(ok) do emit(e) end
end
for _, d in ipairs(drop) do fdel(K, G, d[1], d[2]) end
if redrive then bchg(-moved - gone, moved) else bchg(-moved - gone, 0) end
bsettle(KEYS[11], KEYS[12], ends, now)
if gapply(G, plan, now) then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return {res, out}
