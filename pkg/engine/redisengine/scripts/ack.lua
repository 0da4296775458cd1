-- ack: delete the messages of valid deliveries.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 B, [7 P] (stored bytes: prelude.lua)
-- ARGV: 1 now ms; then 2 per delivery: id, attempt
-- Returns: one code per delivery: 1 deleted, 0 stale (no such message, another attempt, or expired).
local now = tonumber(ARGV[1])
bkeys(6)
local res, ok = {}, {}
local gone, seen = 0, {}
local asked = {}
for i = 2, #ARGV, 2 do asked[#asked + 1] = ARGV[i] end
local vals = {}
if #asked > 0 then vals = redis.call('HMGET', KEYS[3], unpack(asked)) end
for i = 2, #ARGV, 2 do
  local a, ra, ea, sa, v, at = mparse(vals[i / 2], KEYS[4], ARGV[i])
  if a and a == tonumber(ARGV[i + 1]) and ea > now then
    res[#res + 1] = 1; ok[#ok + 1] = {ARGV[i], at == nil}
    if not seen[ARGV[i]] then gone = gone + psize(v, at) end
    seen[ARGV[i]] = true
  else
    res[#res + 1] = 0
  end
end
-- A valid delivery's message was received, so it is in f, not r (a stray r entry would be
-- dropped by the next receive anyway); an s field exists only for the layout before.
local ids, olds = {}, {}
for _, e in ipairs(ok) do
  ids[#ids + 1] = e[1]
  if e[2] then olds[#olds + 1] = e[1] end
end
if #ids > 0 then
  redis.call('ZREM', KEYS[2], unpack(ids))
  redis.call('HDEL', KEYS[3], unpack(ids))
  redis.call('ZREM', KEYS[5], unpack(ids))
end
if #olds > 0 then redis.call('HDEL', KEYS[4], unpack(olds)) end
bchg(-gone, 0)
return res
