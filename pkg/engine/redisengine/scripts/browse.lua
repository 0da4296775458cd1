-- browse: one page of one zset of a partition, without changing anything.
-- KEYS: 1 the zset (r or f), 2 m, 3 s
-- ARGV: 1 lowest time, exclusive (ms; -1: none), 2 highest time, inclusive (ms), 3 limit,
--       4 cursor score, 5 cursor id ("" for the first page), 6 byte cap: no message is
--       read once the page's payloads reached it (filter.MaxScanBytes; 0: none)
-- Returns: {id, score, state, payload, ...} in (score, id) order after the cursor, band by
-- band (prelude.lua: BAND; a band's times are the range ARGV 1-2 offset by the band). A
-- message whose state or payload is gone has state and payload false. Resuming after a cursor
-- message that left the zset meanwhile (a move task takes the page it examined) continues at
-- its old score after its id, so no same-score neighbour is skipped.
local limit = tonumber(ARGV[3])
local cap, read = tonumber(ARGV[6] or '0') or 0, 0
if cap <= 0 then cap = math.huge end -- none given: the limit alone

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

local out = {}
-- emit adds the page's messages of items up to score max.
local function emit(items, max)
  for k = 1, #items, 2 do
    if #out >= 4 * limit or tonumber(items[k + 1]) > max then return end
    if read >= cap and #out > 0 then return end
    local id = items[k]
    out[#out + 1] = id
    out[#out + 1] = items[k + 1]
    local a, ra, ea, sa, payload, _, c = mread(KEYS[2], KEYS[3], id)
    if a then
      out[#out + 1] = fmt_state(a, ra, ea, sa, c)
      out[#out + 1] = payload
      read = read + #payload
    else
      out[#out + 1] = false
      out[#out + 1] = false
    end
  end
end

local lo, hi = tonumber(ARGV[1]), tonumber(ARGV[2])
local first = 0
if ARGV[5] ~= '' then first = pband(tonumber(ARGV[4])) end
for b = first, math.max(first, ztop(KEYS[1])) do
  local need = limit - #out / 4
  if need <= 0 or (read >= cap and #out > 0) then break end
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
return out
