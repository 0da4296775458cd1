-- send: store a batch of new messages in one partition and count the partition's send rate.
-- KEYS: 1 r (ready zset), 2 m (messages), 3 s (states of messages stored before), 4 x (expiry zset),
--       5 send counter of the current second (expires after 2 s)
-- ARGV: 1 now ms, 2 wake channel, 3 wake payload (queue id);
--       then 4 per message: id (16 raw bytes), payload, visibleAt ms, expiresAt ms
-- Returns: the partition's sends in the current second, this batch included.
-- No reads, so nothing to check before writing; OOM refuses the whole script up front.
local now = tonumber(ARGV[1])
local n = 0
for i = 4, #ARGV, 4 do
  local id = ARGV[i]
  redis.call('HSET', KEYS[2], id, mvalue(fmt_state(0, 0, tonumber(ARGV[i + 3]), now), ARGV[i + 1]))
  redis.call('ZADD', KEYS[1], ARGV[i + 2], id)
  redis.call('ZADD', KEYS[4], ARGV[i + 3], id)
  n = n + 1
end
local rate = redis.call('INCRBY', KEYS[5], n)
redis.call('PEXPIRE', KEYS[5], 2000)
redis.call('PUBLISH', ARGV[2], ARGV[3])
return rate
