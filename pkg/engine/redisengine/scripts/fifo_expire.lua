-- fifo_expire: delete up to limit messages of a fifo partition whose retention has ended, and
-- reschedule their groups (an expired head unblocks the next message); trim old dedup outcomes.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 gm, 7 gi, 8 gs, 9 gl, 10 dd, 11 B, [12 P] (stored bytes)
-- ARGV: 1 now ms, 2 limit, 3 wake channel, 4 wake payload, 5 dedup outcomes older than this
--       (ms) are trimmed
-- Returns: the number of messages deleted (limit means more may remain).
local now = tonumber(ARGV[1])
local K, G = fkeys()
local ids = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
bkeys(11)
local skip, groups, prefixes = {}, {}, {}
local gone = 0
for i, id in ipairs(ids) do
  skip[id] = true
  local a, _, _, _, v, at = mstate(KEYS[3], KEYS[4], id)
  if a then gone = gone + psize(v, at) end
  local prefix = redis.call('HGET', KEYS[7], id)
  prefixes[i] = prefix
  if prefix then
    local g = gid_of(prefix)
    groups[g] = (groups[g] or 0) + 1
  end
end
local plan = gplan(G, groups, skip, {}, now)
local old = redis.call('ZRANGEBYSCORE', KEYS[10], '-inf', ARGV[5], 'LIMIT', 0, tonumber(ARGV[2]))
for i, id in ipairs(ids) do fdel(K, G, id, prefixes[i]) end
bchg(-gone, 0)
if gapply(G, plan, now) then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
if #old > 0 then redis.call('ZREM', KEYS[10], unpack(old)) end
return #ids
