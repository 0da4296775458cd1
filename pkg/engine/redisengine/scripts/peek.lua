-- peek: how many messages of a partition are visible, and when the next one becomes visible.
-- Read only; used to spread a receive over partitions.
-- KEYS: 1 r, 2 f, 3 l
-- ARGV: 1 now ms
-- Returns: {visible, nextVisibleAt ms (0: none; only computed when visible is 0)}
local now = ARGV[1]
local visible = redis.call('LLEN', KEYS[3]) + redis.call('ZCOUNT', KEYS[1], '-inf', now) +
  redis.call('ZCOUNT', KEYS[2], '-inf', now)
local next_at = 0
if visible == 0 then
  local nr = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local nf = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if #nr > 0 then next_at = tonumber(nr[2]) end
  if #nf > 0 and (next_at == 0 or tonumber(nf[2]) < next_at) then next_at = tonumber(nf[2]) end
end
return {visible, next_at}
