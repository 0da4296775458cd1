-- consumer_reserve: a named consumer's receive takes room in its backlog before it claims messages
-- (docs/delivery-options.md#consumers-backlogs-and-fairness, consumers.go). Lapsed holdings are
-- dropped first, then up to ARGV[2] slots are reserved as placeholders that lapse with the messages
-- they stand for, so concurrent receives of one consumer never take more than its bound between
-- them.
-- KEYS: 1 the consumer's holdings (ZSET member -> lapse ms), 2 the queue's consumer registry
--       (HASH consumerId -> "maxBacklog|lastSeenMs"), 3 the queue's consumer names (ZSET, all
--       scores 0, member consumerId)
-- ARGV: 1 now ms, 2 messages wanted, 3 maxBacklog (0: no bound), 4 placeholders' lapse ms,
--       5 reservation token, 6 consumerId, 7 key lifetime ms
-- Returns: {granted, held before the reservation}
local now = tonumber(ARGV[1])
local want = tonumber(ARGV[2])
local bound = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
local room = want
if bound > 0 then
  room = math.max(0, math.min(want, bound - held))
  for i = 1, room do
    redis.call('ZADD', KEYS[1], ARGV[4], 'r' .. ARGV[5] .. ':' .. i)
  end
end
redis.call('HSET', KEYS[2], ARGV[6], ARGV[3] .. '|' .. ARGV[1])
redis.call('ZADD', KEYS[3], 0, ARGV[6])
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[7]) end
return {room, held}
