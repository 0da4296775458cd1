-- expire: delete up to limit messages whose retention has ended.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x
-- ARGV: 1 now ms, 2 limit
-- Returns: the number deleted (limit means more may remain).
local K = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]}
local ids = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do del(K, id) end
return #ids
