-- topic_release: give a topic's fan-out lease up if owner holds it.
-- KEYS: 1 the lease
-- ARGV: 1 owner
-- Returns: 1 released, 0 not held by owner.
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local _, o = string.match(v, '^(%d+)|(.*)$')
if o ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
