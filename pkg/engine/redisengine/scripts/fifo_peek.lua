-- fifo_peek: how many groups of a fifo partition are available now, the oldest head among them,
-- and when the next one becomes available. Read only; spreads a receive over partitions.
-- KEYS: 1 gm, 2 gs, 3 gl
-- ARGV: 1 now ms
-- Returns: {available groups, the oldest available head's sequence number (approximate when
--           only locked groups whose lock ended are available), next time a group becomes
--           available (ms; 0: none; only computed when none is available; a parked group never is)}
local n = redis.call('ZCARD', KEYS[2])
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[1], 'LIMIT', 0, 1)
local oldest, nxt = 0, 0
local top = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if #top > 0 then oldest = tonumber(top[2]) end
if #due > 0 then
  n = n + redis.call('ZCOUNT', KEYS[3], '-inf', ARGV[1])
  local head = redis.call('ZRANGEBYLEX', KEYS[1], glo(due[1]), ghi(due[1]), 'LIMIT', 0, 1)
  if #head > 0 and (oldest == 0 or seq_of(head[1]) < oldest) then oldest = seq_of(head[1]) end
end
if n == 0 then
  local o = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ARGV[1], '(' .. ms(PARK), 'WITHSCORES', 'LIMIT', 0, 1)
  if #o > 0 then nxt = tonumber(o[2]) end
end
return {n, oldest, nxt}
