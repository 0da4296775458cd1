-- topic_seq_at: the first sequence of a topic's log published at or after a time (read only; the
-- log is in time order: topic_publish.lua), by binary search over the held sequences.
-- KEYS: 1 log, 2 sequence counter
-- ARGV: 1 the time (ms)
-- Returns: that sequence; the oldest held when every held entry is at or after the time;
-- the last sequence + 1 when none is.
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local at = tonumber(ARGV[1])
local function from(s)
  local r = redis.call('XRANGE', KEYS[1], ms(s) .. '-0', '+', 'COUNT', 1)
  if #r == 0 then return nil end
  local t = 0
  for j = 1, #r[1][2], 2 do
    if r[1][2][j] == 't' then t = tonumber(r[1][2][j + 1]) or 0 end
  end
  return tonumber(string.match(r[1][1], '^(%d+)')), t
end
local s0, t0 = from(0)
if not s0 then return last + 1 end
if t0 >= at then return s0 end
local lo, hi, ans = s0 + 1, last, last + 1
while lo <= hi do
  local mid = math.floor((lo + hi) / 2)
  local s, t = from(mid)
  if not s then
    hi = mid - 1
  elseif t >= at then
    ans, hi = s, mid - 1
  else
    lo = s + 1
  end
end
return ans
