-- purgepart: remove one partition's messages (UNLINK: Redis frees them in the background).
-- KEYS: 1 l, 2 lh, then every other key to remove
-- The list head position moves past the removed list, so a browse cursor taken before the
-- purge never lands among messages sent after it.
local n = redis.call('LLEN', KEYS[1])
if n > 0 then redis.call('INCRBY', KEYS[2], n) end
local rest = {}
for i = 3, #KEYS do rest[#rest + 1] = KEYS[i] end
redis.call('UNLINK', KEYS[1], unpack(rest))
return n
