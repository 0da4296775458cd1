-- fifo_delete: delete one visible or delayed message of a fifo queue's partition by id
-- (docs/lifecycle.md#delete-a-waiting-message) and place its group again (the next message may
-- become available: wake the pollers).
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 gm, 7 gi, 8 gs, 9 gl, 10 B, [11 P]
-- ARGV: 1 now ms, 2 message id (16 raw bytes), 3 wake channel, 4 wake payload (queue id)
-- Returns: {1} deleted; {2} in flight (nothing changed); {0} not here (or expired: left to
-- the sweep, which keeps the group's bookkeeping).
local now = tonumber(ARGV[1])
local id = ARGV[2]
local K, G = fkeys()
bkeys(10)
local a, _, ea, _, mv, at = mstate(KEYS[3], KEYS[4], id)
if not a or ea <= now then return {0} end
local dl = tonumber(redis.call('ZSCORE', KEYS[2], id))
if dl and dl > now then return {2} end
local prefix = redis.call('HGET', G.gi, id)
local size = psize(mv, at or 1)
local plan = {}
if prefix then
  local skip = {}
  skip[id] = true
  plan = gplan(G, {[gid_of(prefix)] = 1}, skip, {}, now)
end
fdel(K, G, id, prefix)
local woke = gapply(G, plan, now)
bchg(-size, 0)
if woke then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return {1}
