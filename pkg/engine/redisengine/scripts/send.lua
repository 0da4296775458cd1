-- send: store a batch of new messages in one partition and count the partition's send rate.
-- KEYS: 1 r (ready zset), 2 m (messages), 3 s (states of messages stored before), 4 x (expiry zset),
--       5 send counter of the current second (expires after 2 s), 6 l (list of never-received
--       messages sent without delay), 7 bf (the partition's barrier fence, barrier_fence.lua),
--       8 B (partition byte hash), [9 P (project byte hash; single server only)]
-- ARGV: 1 now ms, 2 wake channel, 3 wake payload (queue id), 4 expiresAt ms (the whole batch),
--       5 the project's maxStoredBytes (0: none; checked only with P), 6 project id;
--       then 3 per message: id (16 raw bytes), payload, visibleAt ms
-- Returns: the partition's sends in the current second, this batch included; -1 when the
-- batch would take the project past maxStoredBytes (nothing stored); -2 when the partition is
-- fenced for a pending barrier (nothing stored: the engine sends to the barrier hold instead).
-- (Go names, replies.go: -1 sendOverQuota, -2 sendFenced.)
-- A message visible at once goes to the tail of l, one list element and nothing else. l is in
-- send order and its expiry times do not decrease by more than SKEW ms from one element to the
-- next (a batch that would, after the retention was shortened, goes the delayed way), so the
-- sweep, which removes l's expired prefix, leaves an expired message in l at most that long
-- past its expiry (receives never deliver one). SKEW absorbs the clocks of replicas (and of
-- concurrent sends) being a little apart. A delayed message goes to m, r and x.
local now = tonumber(ARGV[1])
local ea = tonumber(ARGV[4])
local SKEW = 2000
if redis.call('EXISTS', KEYS[7]) == 1 then return -2 end
bkeys(8)
PJ = ARGV[6]
local add = 0
for i = 8, #ARGV, 3 do add = add + psize(ARGV[i]) end
local limit = tonumber(ARGV[5])
if PK and limit > 0 and ptotal() + add > limit then return -1 end
local listok = true
local tail = redis.call('LINDEX', KEYS[6], -1)
if tail then
  local _, tea = lfields(tail)
  if not tea or tea > ea + SKEW then listok = false end
end
local push, n = {}, 0
local times = ARGV[1] .. '|' .. ARGV[4] .. '|' -- an element: id .. sentAt|expiresAt| .. payload
for i = 7, #ARGV, 3 do
  local id, p, vis = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  if listok and vis <= now then
    push[#push + 1] = id .. times .. p
  else
    redis.call('HSET', KEYS[2], id, mvalue(fmt_state(0, 0, ea, now), p))
    redis.call('ZADD', KEYS[1], ARGV[i + 2], id)
    redis.call('ZADD', KEYS[4], ARGV[4], id)
  end
  n = n + 1
end
if #push > 0 then redis.call('RPUSH', KEYS[6], unpack(push)) end
bchg(add, 0)
local rate = bump(KEYS[5], n)
redis.call('PUBLISH', ARGV[2], ARGV[3])
return rate
