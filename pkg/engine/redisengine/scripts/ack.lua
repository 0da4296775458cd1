-- ack: delete the messages of valid deliveries.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x
-- ARGV: 1 now ms; then 2 per delivery: id, attempt
-- Returns: one code per delivery: 1 deleted, 0 stale (no such message, another attempt, or expired).
local now = tonumber(ARGV[1])
local K = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]}
local res, ok = {}, {}
for i = 2, #ARGV, 2 do
  local a, ra, ea = mstate(KEYS[3], KEYS[4], ARGV[i])
  if a and a == tonumber(ARGV[i + 1]) and ea > now then
    res[#res + 1] = 1; ok[#ok + 1] = ARGV[i]
  else
    res[#res + 1] = 0
  end
end
for _, id in ipairs(ok) do del(K, id) end
return res
