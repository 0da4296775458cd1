-- fifo_visibility: set the visibility deadline of valid deliveries of a fifo partition to now + d
-- and reschedule their groups: a group stays locked until its last received message's
-- deadline (so a message retried after d keeps its group blocked until then).
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 gm, 7 gi, 8 gs, 9 gl
-- ARGV: 1 now ms, 2 longest time in flight from the receive (ms), 3 wake channel,
--       4 wake payload; then 3 per delivery: id, attempt, d ms
-- Returns: one code per delivery: 1 done, 0 stale, 2 deadline beyond receive + the limit.
-- Publishes when a group became available.
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local K, G = fkeys()
local res, ok, over, groups = {}, {}, {}, {}
for i = 5, #ARGV, 3 do
  local id = ARGV[i]
  local a, ra, ea = mstate(KEYS[3], KEYS[4], id)
  local d = tonumber(ARGV[i + 2])
  if not (a and a == tonumber(ARGV[i + 1]) and ea > now) then
    res[#res + 1] = 0
  elseif now + d > ra + limit then
    res[#res + 1] = 2
  else
    res[#res + 1] = 1
    ok[#ok + 1] = {id, now + d}
    over[id] = now + d
    local prefix = redis.call('HGET', KEYS[7], id)
    if prefix then groups[gid_of(prefix)] = 0 end
  end
end
local plan = gplan(G, groups, {}, over, now)
for _, e in ipairs(ok) do redis.call('ZADD', KEYS[2], ms(e[2]), e[1]) end
if gapply(G, plan, now) then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return res
