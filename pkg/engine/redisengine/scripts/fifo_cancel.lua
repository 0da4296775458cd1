-- fifo_cancel: return valid deliveries of a fifo partition without counting them
-- (docs/delivery-options.md#cancel; cancel.lua says how the count is kept): each message is
-- visible again now (or after a delay: CancelAfter) and its group
-- rescheduled as a release (fifo_visibility.lua with d = 0) does. A delivery whose cancel would be
-- beyond maxCancels is left unchanged with code 3: the engine dead-letters it next (through
-- fifo_deadletter.lua, which keeps the group bookkeeping).
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 gm, 7 gi, 8 gs, 9 gl
-- ARGV: 1 now ms, 2 maxCancels, 3 wake channel, 4 wake payload, 5 delay ms (0: visible now),
--       6 longest time in flight from the receive (ms); then 2 per delivery: id, attempt
-- Returns: one code per delivery: 1 done, 0 stale, 3 beyond maxCancels (unchanged).
-- Publishes when a group became available.
local now = tonumber(ARGV[1])
local maxc = tonumber(ARGV[2])
local delay, limit = tonumber(ARGV[5]), tonumber(ARGV[6])
local K, G = fkeys()
local res, ok, over, groups, seen = {}, {}, {}, {}, {}
for i = 7, #ARGV, 2 do
  local id = ARGV[i]
  local a, ra, ea, sa, p, old, c, cut = mread(KEYS[3], KEYS[4], id)
  if not (a and a == tonumber(ARGV[i + 1]) and ea > now) then
    res[#res + 1] = 0
  elseif cut or seen[id] then
    res[#res + 1] = 1 -- this delivery is cancelled already
  elseif c + 1 > maxc then
    res[#res + 1] = 3
  else
    res[#res + 1] = 1; seen[id] = true
    local at = math.max(math.min(now + delay, ra + limit), now)
    ok[#ok + 1] = {id, mvalue(fmt_state(a, ra, ea, sa, c + 1, true), p), old, at}
    over[id] = at
    local prefix = redis.call('HGET', KEYS[7], id)
    if prefix then groups[gid_of(prefix)] = 0 end
  end
end
local plan = gplan(G, groups, {}, over, now)
for _, e in ipairs(ok) do
  redis.call('HSET', KEYS[3], e[1], e[2])
  if e[3] then redis.call('HDEL', KEYS[4], e[1]) end
  redis.call('ZADD', KEYS[2], ms(e[4]), e[1])
end
if gapply(G, plan, now) then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return res
