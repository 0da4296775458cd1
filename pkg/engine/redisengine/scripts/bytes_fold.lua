-- bytes_fold: Redis Cluster's second step of a stored-bytes change: apply partitions' totals, read
-- from their byte hashes after the change, to the project's byte hash, and release the send
-- reservations they settle. Idempotent: a total is applied only when its version is newer.
-- KEYS: 1 P (project byte hash), 2 R (the project's send reservations)
-- ARGV: 1 how many partitions follow; then 2 per partition: field (its B key), "ver|n|o";
--       then reservations to release ("token|bytes", as bytes_reserve.lua took them)
-- Returns: the project's total after the call.
local np = tonumber(ARGV[1])
for i = 2, 2 * np, 2 do
  local ver, n, o = string.match(ARGV[i + 1], '^(%d+)|(%d+)|(%d+)$')
  if ver then bfold(KEYS[1], ARGV[i], tonumber(ver), tonumber(n) + tonumber(o), true) end
end
for i = 2 * np + 2, #ARGV do
  if redis.call('ZREM', KEYS[2], ARGV[i]) == 1 then
    redis.call('HINCRBY', KEYS[1], 'rs', -tonumber(string.match(ARGV[i], '|(%d+)$')))
  end
end
return tonumber(redis.call('HGET', KEYS[1], 't') or '0')
