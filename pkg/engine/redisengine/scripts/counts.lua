-- counts: a partition's counts by state and the send time of its oldest message. Read only.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 l
-- ARGV: 1 now ms, 2 how many of the earliest-expiring messages to sample for the oldest
-- Returns: {visible, inFlight, delayed, oldest sentAt ms (0: none)}
local now = ARGV[1]
local visible = redis.call('LLEN', KEYS[6]) + redis.call('ZCOUNT', KEYS[1], '-inf', now) +
  redis.call('ZCOUNT', KEYS[2], '-inf', now)
local inflight = redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')
local delayed = redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
local oldest = 0
-- l is in send order and expired elements are its prefix: its first live one is its oldest.
for _, v in ipairs(redis.call('LRANGE', KEYS[6], 0, tonumber(ARGV[2]) - 1)) do
  local sa, ea = lfields(v)
  if ea and ea > tonumber(now) then
    oldest = sa
    break
  end
end
local ids = redis.call('ZRANGEBYSCORE', KEYS[5], '(' .. now, '+inf', 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  local a, ra, ea, sa = mstate(KEYS[3], KEYS[4], id)
  if a and (oldest == 0 or sa < oldest) then oldest = sa end
end
return {visible, inflight, delayed, oldest}
