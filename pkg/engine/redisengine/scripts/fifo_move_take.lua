-- fifo_move_take: take chosen visible messages of a fifo partition out of it, into its move outbox
-- (the first step of a move task's move; move.go finishes it), counting them for the task in
-- the same step, and reschedule their groups.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 gm, 7 gi, 8 gs, 9 gl, 10 mo (move outbox),
--       11 mt (move counters), 12 B, [13 P] (stored bytes)
-- ARGV: 1 now ms, 2 wake channel, 3 wake payload, 4 task tag; then 2 per message: id,
--       destination (the outbox entry's reason)
-- Returns: {id, outbox value, ...} of the messages taken (ones no longer visible are left
-- alone). Publishes when a group became available.
local now = tonumber(ARGV[1])
local K, G = fkeys()
bkeys(12)
local skip, groups, ok = {}, {}, {}
local moved = 0
for i = 5, #ARGV, 2 do
  local id = ARGV[i]
  if not skip[id] then
    local rs = tonumber(redis.call('ZSCORE', KEYS[1], id))
    local fs = tonumber(redis.call('ZSCORE', KEYS[2], id))
    if (rs and rs <= now) or (fs and fs <= now) then
      local a, ra, ea, sa, p = mread(KEYS[3], KEYS[4], id)
      if a and ea > now then
        skip[id] = true
        local prefix = redis.call('HGET', KEYS[7], id)
        ok[#ok + 1] = {id, prefix, outbox_value(now, sa, ARGV[i + 1], p, a)}
        moved = moved + psize(p)
        if prefix then
          local g = gid_of(prefix)
          groups[g] = (groups[g] or 0) + 1
        end
      end
    end
  end
end
local plan = gplan(G, groups, skip, {}, now)
local out = {}
for _, e in ipairs(ok) do
  redis.call('HSET', KEYS[10], e[1], e[3])
  out[#out + 1] = e[1]; out[#out + 1] = e[3]
end
if #ok > 0 then redis.call('HINCRBY', KEYS[11], ARGV[4], #ok) end
for _, e in ipairs(ok) do fdel(K, G, e[1], e[2]) end
bchg(-moved, moved)
if gapply(G, plan, now) then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return out
