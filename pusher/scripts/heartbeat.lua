-- heartbeat: record a pusher replica as alive and count the live ones.
-- KEYS: 1 the members zset (member: replica, score: when its heartbeat lapses, ms)
-- ARGV: 1 member, 2 ttl ms
-- Returns: the number of live members (this one included).
-- The one script that calls TIME, on purpose: membership is timed by the Redis server's clock,
-- so replicas whose clocks disagree still agree on who is alive (the leases' PX is timed by
-- the same clock). Redis replicates the script's effects, so TIME is safe here.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 10)
return redis.call('ZCARD', KEYS[1])
