-- barrier_hold: accept messages into a standard queue's barrier hold (keys.go), the queue-wide
-- acceptance order while a barrier is pending: a barrier and every message accepted after it
-- wait here, in order, until the barrier step (barrier_step.lua) moves them to the partitions.
-- KEYS: 1 the queue's partitions hash (fields n, bon, bg), 2 hl (the hold list), 3 HB (the
--       hold's byte hash), [4 P (project byte hash; single server only)]
-- ARGV: 1 mode: "b" (the batch holds a barrier: turn barrier mode on when it is off) or "m"
--       (hold only while barrier mode is on), 2 the project's maxStoredBytes (0: none;
--       checked only with P), 3 project id, then one element per message:
--       kind ("b" barrier, "m" other) .. id (16 raw bytes) .. "sentAt|expiresAt|visibleAt|" .. payload
-- Returns: {status, generation, partition count}: status 1 held, 0 barrier mode is off (mode
-- "m"; nothing stored), -1 the batch would take the project past maxStoredBytes.
-- (Go names, replies.go: 0 holdOff, -1 holdOverQuota.)
-- Turning barrier mode on raises the generation bg and sets bon to it; the caller then fences
-- every partition with that generation (barrier_fence.lua) before answering, so no send reaches a
-- partition afterwards. Partitions do not grow while bon is set (grow.lua).
bkeys(3)
PJ = ARGV[3]
local on = redis.call('HGET', KEYS[1], 'bon')
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '1')
if not on and ARGV[1] ~= 'b' then
  return {0, tonumber(redis.call('HGET', KEYS[1], 'bg') or '0'), n}
end
local add = 0
for i = 4, #ARGV do
  local v = ARGV[i]
  local j = string.find(v, '|', 19, true)
  j = j and string.find(v, '|', j + 1, true)
  j = j and string.find(v, '|', j + 1, true)
  if j then add = add + psize(v, j + 1) end
end
local limit = tonumber(ARGV[2])
if PK and limit > 0 and ptotal() + add > limit then return {-1, 0, n} end
if not on then
  on = redis.call('HINCRBY', KEYS[1], 'bg', 1)
  redis.call('HSET', KEYS[1], 'bon', on)
end
redis.call('RPUSH', KEYS[2], unpack(ARGV, 4))
bchg(add, 0)
return {1, tonumber(on), n}
