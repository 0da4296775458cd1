-- topic_lease: take or renew a topic's fan-out lease (engine clock; PX only as a backstop).
-- KEYS: 1 the lease
-- ARGV: 1 owner, 2 now ms, 3 until ms, 4 PX ms
-- Returns: 1 held by owner until ARGV 3, 0 another owner holds it.
local v = redis.call('GET', KEYS[1])
if v then
  local u, o = string.match(v, '^(%d+)|(.*)$')
  if u and o ~= ARGV[1] and tonumber(u) > tonumber(ARGV[2]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[3] .. '|' .. ARGV[1], 'PX', ARGV[4])
return 1
