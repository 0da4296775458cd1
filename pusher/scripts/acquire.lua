-- acquire: take a subscription's lease if nobody holds it, with a new fencing token.
-- KEYS: 1 the lease, 2 the lease's token counter (same hash tag)
-- ARGV: 1 member, 2 ttl ms
-- Returns: the new token (> 0), or 0 when the lease is held.
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local tok = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. tok, 'PX', ARGV[2])
return tok
