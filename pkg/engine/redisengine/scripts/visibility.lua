-- visibility: set the visibility deadline of valid deliveries to now + d.
-- KEYS: 1 f, 2 m, 3 s
-- ARGV: 1 now ms, 2 longest time in flight from the receive (ms), 3 wake channel,
--       4 wake payload; then 3 per delivery: id, attempt, d ms
-- Returns: one code per delivery: 1 done, 0 stale, 2 deadline beyond receive + the limit.
-- Publishes a wake-up when any delivery was released (d = 0).
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local res, ok = {}, {}
local released = false
for i = 5, #ARGV, 3 do
  local a, ra, ea = mstate(KEYS[2], KEYS[3], ARGV[i])
  local d = tonumber(ARGV[i + 2])
  if not (a and a == tonumber(ARGV[i + 1]) and ea > now) then
    res[#res + 1] = 0
  elseif now + d > ra + limit then
    res[#res + 1] = 2
  else
    -- The new deadline stays in the message's priority band (prelude.lua: BAND).
    local b = pband(tonumber(redis.call('ZSCORE', KEYS[1], ARGV[i]) or '0'))
    res[#res + 1] = 1; ok[#ok + 1] = {ARGV[i], ms(b * BAND + now + d)}
    if d == 0 then released = true end
  end
end
for _, e in ipairs(ok) do redis.call('ZADD', KEYS[1], e[2], e[1]) end
if released then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return res
