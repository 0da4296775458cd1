-- barrier_unfence: lift a partition's barrier fence of generation g or older (a newer barrier's
-- fence stays).
-- KEYS: 1 bf
-- ARGV: 1 g
-- Returns: 1 lifted, 0 not (none, or newer).
local v = redis.call('GET', KEYS[1])
if v and tonumber(v) <= tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
