-- browse: one page of one zset of a partition, without changing anything.
-- KEYS: 1 the zset (r or f), 2 m, 3 s
-- ARGV: 1 lowest time, exclusive (ms; -1: none), 2 highest time, inclusive (ms), 3 limit,
--       4 cursor score, 5 cursor id ("" for the first page), 6 byte budget (0: none),
--       7 "1" when the page already holds a message (else the first one always fits)
-- Returns: {id, score, state, payload, ...} in (score, id) order after the cursor, band by
-- band (prelude.lua: BAND; a band's times are the range ARGV 1-2 offset by the band). A
-- message whose state or payload is gone has state and payload false. When the next message
-- would take the reply's bytes past the budget, the reply ends there with one more element,
-- "cut" (so a reply stays within the budget, payloads included, in Redis as on the wire). Resuming after a cursor
-- message that left the zset meanwhile (a move task takes the page it examined) continues at
-- its old score after its id, so no same-score neighbour is skipped.
local limit = tonumber(ARGV[3])

-- after reports whether member a sorts after b among members of one score: Redis orders
-- them bytewise (Lua's own comparison follows the locale).
local function after(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then return x > y end
  end
  return #a > #b
end

-- resume is the n members after (score cs, member id) up to score max when that member is
-- gone: the score's members up to id are skipped one fetch at a time.
local function resume(cs, id, max, n)
  local out, off = {}, 0
  while #out < 2 * n do
    local b = redis.call('ZRANGEBYSCORE', KEYS[1], cs, max, 'WITHSCORES', 'LIMIT', off, n)
    if #b == 0 then break end
    for k = 1, #b, 2 do
      if #out < 2 * n and (tonumber(b[k + 1]) > tonumber(cs) or after(b[k], id)) then
        out[#out + 1] = b[k]
        out[#out + 1] = b[k + 1]
      end
    end
    off = off + #b / 2
  end
  return out
end

local budget, held = tonumber(ARGV[6] or '0'), ARGV[7] == '1'
local used, cut = 0, false
local out = {}
-- emit adds the page's messages of items up to score max, within the byte budget.
local function emit(items, max)
  for k = 1, #items, 2 do
    if #out >= 4 * limit or tonumber(items[k + 1]) > max then return end
    local id = items[k]
    local a, ra, ea, sa, payload, _, c = mread(KEYS[2], KEYS[3], id)
    local st = false
    if a then st = fmt_state(a, ra, ea, sa, c) else payload = false end
    if budget > 0 then
      local size = #id + #items[k + 1] + (st and #st or 0) + (payload and #payload or 0)
      if used + size > budget and (held or #out > 0) then
        cut = true
        return
      end
      used = used + size
    end
    out[#out + 1] = id
    out[#out + 1] = items[k + 1]
    out[#out + 1] = st
    out[#out + 1] = payload
  end
end

local lo, hi = tonumber(ARGV[1]), tonumber(ARGV[2])
local first = 0
if ARGV[5] ~= '' then first = pband(tonumber(ARGV[4])) end
for b = first, math.max(first, ztop(KEYS[1])) do
  local need = limit - #out / 4
  if need <= 0 or cut then break end
  local min, max = ms(b * BAND + lo + 1), b * BAND + hi
  local items
  if b == first and ARGV[5] ~= '' then
    local sc = redis.call('ZSCORE', KEYS[1], ARGV[5])
    if sc and tonumber(sc) == tonumber(ARGV[4]) then
      local rank = redis.call('ZRANK', KEYS[1], ARGV[5])
      items = redis.call('ZRANGE', KEYS[1], rank + 1, rank + need, 'WITHSCORES')
    else
      items = resume(ARGV[4], ARGV[5], ms(max), need)
    end
  else
    items = redis.call('ZRANGEBYSCORE', KEYS[1], min, ms(max), 'WITHSCORES', 'LIMIT', 0, need)
  end
  emit(items, max)
end
if cut then out[#out + 1] = 'cut' end
return out
