-- topic_advance: record the fan-out's progress on a topic's bindings (a binding that is gone is
-- skipped): the cursor rises to through (never falls), the counts add up, and a last error,
-- when given, replaces the binding's.
-- KEYS: 1 bindings hash
-- ARGV: 1 now ms; then 5 per binding: id, through, copied, failed, last error ("" none)
-- Returns: how many bindings were updated.
local n = 0
for i = 2, #ARGV, 5 do
  local v = redis.call('HGET', KEYS[1], ARGV[i])
  local s, c, f, at, q, fl, rest
  if v then s, c, f, at, q, fl, rest = string.match(v, '^(%d+)|(%-?%d+)|(%-?%d+)|(%d+)|([^|]*)|(%d+):()') end
  if s then
    local tail = string.sub(v, rest)
    local filter, lerr = string.sub(tail, 1, tonumber(fl)), string.sub(tail, tonumber(fl) + 1)
    local seq = tonumber(s)
    local th = tonumber(ARGV[i + 1])
    if th > seq then seq = th end
    if ARGV[i + 4] ~= '' then lerr, at = ARGV[i + 4], ARGV[1] end
    redis.call('HSET', KEYS[1], ARGV[i], ms(seq) .. '|' .. ms(tonumber(c) + tonumber(ARGV[i + 2])) .. '|' ..
      ms(tonumber(f) + tonumber(ARGV[i + 3])) .. '|' .. at .. '|' .. q .. '|' .. fl .. ':' .. filter .. lerr)
    n = n + 1
  end
end
return n
