-- topic_filter: replace a binding's filter, keeping its cursor and counts.
-- KEYS: 1 bindings hash
-- ARGV: 1 binding id, 2 the filter ("" none)
-- Returns: 1 replaced, 0 no such binding.
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local head, fl, rest = string.match(v, '^(%d+|%-?%d+|%-?%d+|%d+|[^|]*|)(%d+):()')
if not head then return 0 end
local lerr = string.sub(v, rest + tonumber(fl))
redis.call('HSET', KEYS[1], ARGV[1], head .. #ARGV[2] .. ':' .. ARGV[2] .. lerr)
return 1
