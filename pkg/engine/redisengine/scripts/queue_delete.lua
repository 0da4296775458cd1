-- queue_delete: remove every key of one partition of a deleted queue (UNLINK: freed in the
-- background) and take its bytes off the project's count.
-- KEYS: 1 B, then every key of the partition, then P when ARGV 1 is "1" (single server)
-- ARGV: 1 "1" when P is passed (the project's bytes are folded here: single server)
-- Returns: the bytes taken off the count (messages' and outbox's).
-- B stays, zeroed with a new version and expiring after a day, so the engine's fold on
-- Redis Cluster sees the delete (see bfold).
local last = #KEYS
if ARGV[1] == '1' then PK = KEYS[last]; last = last - 1 end
BK = KEYS[1]
local n = tonumber(redis.call('HGET', BK, 'n') or '0')
local o = tonumber(redis.call('HGET', BK, 'o') or '0')
local rest = {}
for i = 2, last do rest[#rest + 1] = KEYS[i] end
redis.call('UNLINK', unpack(rest))
if redis.call('EXISTS', BK) == 1 then
  bchg(-n, -o)
  redis.call('PEXPIRE', BK, 86400000)
end
return n + o
