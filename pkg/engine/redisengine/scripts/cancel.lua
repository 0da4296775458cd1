-- cancel: return valid deliveries of a standard queue without counting them
-- (docs/delivery-options.md#cancel): each message is visible again now (or after a delay:
-- CancelAfter), in its priority band, with one more cancel in its state (prelude.lua:
-- attempt_field), so its receiveCount is one lower. The cancel beyond maxCancels moves it to the
-- outbox (with a redrive policy) or deletes it, like deadletter.lua. The attempt stays, so a
-- receive still makes the handle stale; the cancelled mark makes a second cancel of the same
-- delivery succeed without counting again.
-- With ARGV 9 "keep", a delivery whose cancel would pass maxCancels is left unchanged with
-- code 3 instead (CancelAfter retries it, counted).
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 o, 7 B, [8 P] (stored bytes, as in deadletter.lua)
-- ARGV: 1 now ms, 2 maxCancels, 3 "1" with a redrive policy else "0", 4 dead-letter reason,
--       5 wake channel, 6 wake payload, 7 delay ms (0: visible now), 8 longest time in flight
--       from the receive (ms), 9 "dl" or "keep" (beyond maxCancels); then 2 per delivery: id,
--       attempt
-- Returns: {{one code per delivery: 1 done, 0 stale, 3 beyond maxCancels (kept)},
--          {id, outbox value, ...}}
local now = tonumber(ARGV[1])
local maxc = tonumber(ARGV[2])
local redrive = ARGV[3] == '1'
local delay, limit, keep = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9] == 'keep'
local K = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]}
bkeys(7)
local res, back, dead, seen = {}, {}, {}, {}
local moved = 0
for i = 10, #ARGV, 2 do
  local id = ARGV[i]
  local a, ra, ea, sa, p, old, c, cut = mread(KEYS[3], KEYS[4], id)
  if not (a and a == tonumber(ARGV[i + 1]) and ea > now) then
    res[#res + 1] = 0
  elseif cut or seen[id] then
    res[#res + 1] = 1 -- this delivery is cancelled already
  elseif c + 1 > maxc and keep then
    res[#res + 1] = 3
  elseif c + 1 > maxc then
    res[#res + 1] = 1; seen[id] = true
    dead[#dead + 1] = {id, outbox_value(now, sa, ARGV[4], p, a)}
    moved = moved + psize(p)
  else
    res[#res + 1] = 1; seen[id] = true
    local b = pband(tonumber(redis.call('ZSCORE', KEYS[2], id) or '0'))
    local at = math.max(math.min(now + delay, ra + limit), now)
    back[#back + 1] = {id, mvalue(fmt_state(a, ra, ea, sa, c + 1, true), p), old, ms(b * BAND + at)}
  end
end
for _, e in ipairs(back) do
  redis.call('HSET', KEYS[3], e[1], e[2])
  if e[3] then redis.call('HDEL', KEYS[4], e[1]) end
  redis.call('ZADD', KEYS[2], e[4], e[1])
end
local out = dead_letter(K, KEYS[6], dead, redrive, moved)
if #back > 0 and delay == 0 then redis.call('PUBLISH', ARGV[5], ARGV[6]) end
return {res, out}
