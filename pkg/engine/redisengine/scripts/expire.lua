-- expire: delete up to limit messages whose retention has ended.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 l, 7 lh, 8 k, 9 ki (conflation keys: an expired waiting
--       message frees its key), 10 B, [11 P] (stored bytes)
-- ARGV: 1 now ms, 2 limit
-- Returns: the number deleted (limit means more may remain).
-- l's expired messages are its prefix, give or take send.lua's SKEW: one expired less than
-- that long ago may wait behind a live one until the next sweep.
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local K = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]}
bkeys(10)
local n, gone = 0, 0
for _, v in ipairs(redis.call('LRANGE', KEYS[6], 0, limit - 1)) do
  local _, ea, _, _, at = lfields(v)
  if ea and ea > now then break end
  n = n + 1
  if at then gone = gone + psize(v, at) end
end
local ids = {}
if n < limit then ids = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', ARGV[1], 'LIMIT', 0, limit - n) end
if n > 0 then
  redis.call('LTRIM', KEYS[6], n, -1)
  redis.call('INCRBY', KEYS[7], n)
end
for _, id in ipairs(ids) do
  local a, _, _, _, v, at = mstate(KEYS[3], KEYS[4], id)
  if a then gone = gone + psize(v, at) end
end
for _, id in ipairs(ids) do del(K, id) end
if #ids > 0 and redis.call('EXISTS', KEYS[9]) == 1 then
  for _, id in ipairs(ids) do unkey(KEYS[8], KEYS[9], id) end
end
bchg(-gone, 0)
return n + #ids
