-- purge_partition: remove one partition's messages (UNLINK: Redis frees them in the background).
-- KEYS: 1 l, 2 lh, 3 B (stored bytes: its message bytes go, its outbox's stay), then every
--       other key to remove, then P when ARGV 1 is "1" (stored bytes, single server)
-- ARGV: 1 "1" when P is passed (the project's bytes are folded here: single server)
-- Returns: the length the list l had (the messages it held, now past the list head).
-- The list head position moves past the removed list, so a browse cursor taken before the
-- purge never lands among messages sent after it.
local n = redis.call('LLEN', KEYS[1])
if n > 0 then redis.call('INCRBY', KEYS[2], n) end
local last = #KEYS
if ARGV[1] == '1' then PK = KEYS[last]; last = last - 1 end
BK = KEYS[3]
bchg(-tonumber(redis.call('HGET', BK, 'n') or '0'), 0)
local rest = {}
for i = 4, last do rest[#rest + 1] = KEYS[i] end
redis.call('UNLINK', KEYS[1], unpack(rest))
return n
