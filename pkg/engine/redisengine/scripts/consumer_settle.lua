-- consumer_settle: settled deliveries of one consumer leave its holdings; a delivery whose visibility
-- moved is held until its new deadline (a release is a settlement: lapse 0).
-- KEYS: 1 the consumer's holdings (ZSET member -> lapse ms)
-- ARGV: 1 now ms, then pairs of member (message id + attempt) and new lapse ms (0: settled)
-- Returns: how many deliveries left the holdings
local now = tonumber(ARGV[1])
local left = 0
for i = 2, #ARGV, 2 do
  local until_ms = tonumber(ARGV[i + 1])
  if until_ms <= now then
    left = left + redis.call('ZREM', KEYS[1], ARGV[i])
  else
    redis.call('ZADD', KEYS[1], until_ms, ARGV[i])
  end
end
return left
