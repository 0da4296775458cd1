-- outbox_clear: clear dead-letter outbox entries whose move finished (or can never), and take
-- their bytes off the partition's outbox count.
-- KEYS: 1 o, 2 B, [3 P] (stored bytes: prelude.lua)
-- ARGV: the outbox fields (message ids) to clear
-- Returns: how many were cleared.
bkeys(2)
local gone, n = 0, 0
for _, id in ipairs(ARGV) do
  local v = redis.call('HGET', KEYS[1], id)
  if v then
    gone = gone + osize(v)
    n = n + 1
    redis.call('HDEL', KEYS[1], id)
  end
end
bchg(0, -gone)
return n
