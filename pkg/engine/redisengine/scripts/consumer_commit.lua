-- consumer_commit: a named consumer's receive turns its reserved slots into the messages it took
-- (consumer_reserve.lua): the placeholders go, each received delivery is held until it lapses.
-- KEYS: 1 the consumer's holdings (ZSET member -> lapse ms)
-- ARGV: 1 reservation token, 2 placeholders reserved, 3 key lifetime ms, then pairs of
--       member (message id, 16 raw bytes, + attempt) and lapse ms
-- Returns: 1
for i = 1, tonumber(ARGV[2]) do
  redis.call('ZREM', KEYS[1], 'r' .. ARGV[1] .. ':' .. i)
end
for i = 4, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i])
end
if #ARGV >= 4 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
