-- bytes_reserve: Redis Cluster's first step of a send under maxStoredBytes: reserve the batch's
-- bytes in the project's byte hash unless stored plus reserved bytes would pass the limit.
-- The engine releases the reservation with the fold after the send (bytes_fold.lua), or at once
-- when the send failed; one left by a crashed replica lapses at its expiry.
-- KEYS: 1 P (project byte hash: t stored, rs reserved), 2 R (reservations: zset of
--       "token|bytes" by expiry ms)
-- ARGV: 1 now ms, 2 bytes, 3 limit, 4 member "token|bytes", 5 expiry ms
-- Returns: 1 reserved, 0 refused.
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, 100)) do
  redis.call('ZREM', KEYS[2], m)
  redis.call('HINCRBY', KEYS[1], 'rs', -tonumber(string.match(m, '|(%d+)$') or '0'))
end
local t = tonumber(redis.call('HGET', KEYS[1], 't') or '0')
local rs = tonumber(redis.call('HGET', KEYS[1], 'rs') or '0')
if t + rs + tonumber(ARGV[2]) > tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[4])
redis.call('HINCRBY', KEYS[1], 'rs', ARGV[2])
return 1
