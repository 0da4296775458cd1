-- topic_publish: append a publish to a topic's log, all or nothing (docs/topics.md; topics.go): per
-- message the next sequence, its keyed state change and its fifo dedup marker, the stored
-- bytes of log and state (prelude.lua: bchg), then the wake-up of the fan-out.
-- KEYS: 1 log (stream), 2 sequence counter, 3 state hash, 4 state keys zset, 5 B (the
--       topic's byte hash), [6 P (project byte hash) when ARGV 8 is "1"], then the dedup
--       markers the messages name by index
-- ARGV: 1 now ms, 2 wake channel, 3 wake payload (the topic id), 4 the project's
--       maxStoredBytes (0: none; checked only with P), 5 project id, 6 dedup window ms,
--       7 marker lifetime ms (PX), 8 "1" when P is passed; then 8 per message: entry
--       (topicenc.go; its bytes 3..18 are the message id), its stored bytes, index in KEYS
--       of its dedup marker (0: none), key ("" none), state change ("" none, "r" set,
--       "d" delete), expectation ("" none, else the sequence of the key's state the engine
--       merged from, 0 for none), state tail (topicenc.go), what the engine planned it as
--       ("" nothing, "0" new, "1" a duplicate: the messages after it merged without it)
-- Returns: {last sequence, {id, sequence, duplicate (1/0), ...}}; {-1} when the publish would
-- take the project past maxStoredBytes, {-2} when an expectation or a plan failed (nothing
-- written). (Go names, replies.go: -1 publishOverQuota, -2 publishConflict.)
-- The first write is the first entry's XADD, so a counter behind its log (a damaged store)
-- fails the publish before it writes anything. The publish time is never below the log's
-- last entry's, so the log is in time order too (SequenceAt and Trim rely on it) whatever
-- the replicas' clocks.
local now = tonumber(ARGV[1])
BK = KEYS[5]
if ARGV[8] == '1' then PK = KEYS[6] end
PJ = ARGV[5]
local window = tonumber(ARGV[6])
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local pa = now
local tail = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #tail > 0 then
  local f = tail[1][2]
  for j = 1, #f, 2 do
    if f[j] == 't' then
      local t = tonumber(f[j + 1])
      if t and t > pa then pa = t end
    end
  end
end
local function sbytes(v)
  if not v then return 0 end
  return tonumber(string.match(v, '^%d+|%d+|(%d+)|')) or 0
end
local seen, view = {}, {}
local steps, out, add, seq = {}, {}, 0, last
for i = 9, #ARGV, 8 do
  local entry, size, dk, key, op, expect = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  local id = string.sub(entry, 3, 18)
  if expect ~= '' then -- checked even for a duplicate: the messages after it merged from the state read
    local v = redis.call('HGET', KEYS[3], key)
    local have = 0
    if v then have = tonumber(string.match(v, '^(%d+)|')) or 0 end
    if have ~= tonumber(expect) then return {-2} end
  end
  local dup = nil
  if dk > 0 then
    dup = seen[dk]
    if not dup then
      local v = redis.call('GET', KEYS[dk])
      if v then
        local s, at, rest = string.match(v, '^(%d+)|(%d+)|()')
        if s and now - tonumber(at) < window then dup = {tonumber(s), string.sub(v, rest)} end
      end
    end
  end
  local plan = ARGV[i + 7]
  if plan ~= '' and (dup ~= nil) ~= (plan == '1') then return {-2} end
  if dup then
    out[#out + 1] = dup[2]; out[#out + 1] = dup[1]; out[#out + 1] = 1
  else
    seq = seq + 1
    if dk > 0 then seen[dk] = {seq, id} end
    if op ~= '' then
      local cur = view[key]
      if cur == nil then cur = sbytes(redis.call('HGET', KEYS[3], key)) end
      if op == 'r' then
        add = add + size - cur; view[key] = size
      else
        add = add - cur; view[key] = 0
      end
    end
    add = add + size
    steps[#steps + 1] = {seq, i}
    out[#out + 1] = id; out[#out + 1] = seq; out[#out + 1] = 0
  end
end
local limit = tonumber(ARGV[4])
if PK and limit > 0 and add > 0 and ptotal() + add > limit then return {-1} end
for _, s in ipairs(steps) do
  local sq, i = ms(s[1]), s[2]
  redis.call('XADD', KEYS[1], sq .. '-0', 'e', ARGV[i], 's', ARGV[i + 1], 't', ms(pa))
  local key, op = ARGV[i + 3], ARGV[i + 4]
  if op == 'r' then
    redis.call('HSET', KEYS[3], key, sq .. '|' .. ms(pa) .. '|' .. ARGV[i + 1] .. '|' .. ARGV[i + 6])
    redis.call('ZADD', KEYS[4], 0, key)
  elseif op == 'd' then
    redis.call('HDEL', KEYS[3], key)
    redis.call('ZREM', KEYS[4], key)
  end
  local dk = tonumber(ARGV[i + 2])
  if dk > 0 then
    redis.call('SET', KEYS[dk], sq .. '|' .. ARGV[1] .. '|' .. string.sub(ARGV[i], 3, 18), 'PX', ARGV[7])
  end
end
if seq > last then redis.call('SET', KEYS[2], ms(seq)) end
bchg(add, 0)
if #steps > 0 then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return {seq, out}
