-- topic_trim: one bounded step of a topic's trim: drop the log's oldest entries older than the
-- retention or, at retention 0, every binding has passed (all of them when it has none), and
-- take their bytes off the topic's count.
-- KEYS: 1 log, 2 sequence counter, 3 bindings hash, 4 B, [5 P when ARGV 4 is "1"]
-- ARGV: 1 now ms, 2 retention ms (0: keep nothing beyond fan-out), 3 most entries to drop,
--       4 "1" when P is passed
-- Returns: {entries dropped, 1 when there may be more to drop}.
BK = KEYS[4]
if ARGV[4] == '1' then PK = KEYS[5] end
local ret = tonumber(ARGV[2])
local cutoff = tonumber(ARGV[1]) - ret
local upto = 0
if ret == 0 then
  upto = tonumber(redis.call('GET', KEYS[2]) or '0')
  for _, v in ipairs(redis.call('HVALS', KEYS[3])) do
    local s = tonumber(string.match(v, '^(%d+)|'))
    if s and s < upto then upto = s end
  end
end
local max = tonumber(ARGV[3])
local es = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', max)
local gone, bytes, lastseq = 0, 0, 0
for _, e in ipairs(es) do
  local seq = tonumber(string.match(e[1], '^(%d+)'))
  local f, t, s = e[2], 0, 0
  for j = 1, #f, 2 do
    if f[j] == 't' then t = tonumber(f[j + 1]) or 0 elseif f[j] == 's' then s = tonumber(f[j + 1]) or 0 end
  end
  local drop
  if ret == 0 then drop = seq <= upto else drop = t < cutoff end
  if not drop then break end
  gone, bytes, lastseq = gone + 1, bytes + s, seq
end
if gone > 0 then
  redis.call('XTRIM', KEYS[1], 'MINID', ms(lastseq + 1) .. '-0')
  bchg(-bytes, 0)
end
local more = 0
if gone == max then more = 1 end
return {gone, more}
