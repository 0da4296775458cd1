-- browse: one page of one zset of a partition, without changing anything.
-- KEYS: 1 the zset (r or f), 2 m, 3 s
-- ARGV: 1 min score ("-inf" or "(<ms>"), 2 max score (ms, inclusive), 3 limit,
--       4 cursor score, 5 cursor id ("" for the first page)
-- Returns: {id, score, state, payload, ...} in (score, id) order after the cursor. A message
-- whose state or payload is gone has state and payload false. Resuming after a cursor message
-- that moved meanwhile continues after its old score (same-score neighbours may be skipped).
local limit = tonumber(ARGV[3])
local max = tonumber(ARGV[2])
local items
if ARGV[5] ~= '' then
  local sc = redis.call('ZSCORE', KEYS[1], ARGV[5])
  if sc and tonumber(sc) == tonumber(ARGV[4]) then
    local rank = redis.call('ZRANK', KEYS[1], ARGV[5])
    items = redis.call('ZRANGE', KEYS[1], rank + 1, rank + limit, 'WITHSCORES')
  else
    items = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[4], ARGV[2], 'WITHSCORES', 'LIMIT', 0, limit)
  end
else
  items = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[2], 'WITHSCORES', 'LIMIT', 0, limit)
end
local out = {}
for k = 1, #items, 2 do
  if tonumber(items[k + 1]) > max then break end
  local id = items[k]
  out[#out + 1] = id
  out[#out + 1] = items[k + 1]
  local a, ra, ea, sa, payload = mread(KEYS[2], KEYS[3], id)
  if a then
    out[#out + 1] = fmt_state(a, ra, ea, sa)
    out[#out + 1] = payload
  else
    out[#out + 1] = false
    out[#out + 1] = false
  end
end
return out
