-- keyed_send: store a send that has conflation keys (docs/lifecycle.md#conflation-and-delta-publish) in
-- one partition, all or nothing, in order: a keyed message whose key's message waits never
-- delivered changes that message (its payload; it keeps id, state, place and delay) instead of
-- being stored; the rest are stored as new messages (in m, r and x, never the list l: a waiting
-- keyed message must be changeable in place).
-- KEYS: 1 r, 2 m, 3 s, 4 x, 5 send counter of the current second, 6 f, 7 k (key -> id ..
--       version), 8 ki (id -> key), 9 bf (the partition's barrier fence, barrier_fence.lua), 10 B,
--       [11 P]
-- ARGV: 1 now ms, 2 wake channel, 3 wake payload (queue id), 4 expiresAt ms, 5 the project's
--       maxStoredBytes (0: none; checked only with P), 6 project id;
--       then 5 per message: id (16 raw bytes), payload, visibleAt ms, key ("" none),
--       expect: "" stores or changes whatever waits; "n" expects no message of the key to
--       wait; id (16 raw bytes) .. version digits expects that message waiting at that
--       version (what keyed_read.lua saw: the engine computed the payload, a merge, from it; the
--       id too, as a message stored after the one read starts again at version 1)
-- Returns: {rate, {id, merged (1/0), ...}}: the partition's sends this second and per message
-- the id it answers; {-1} when the send would pass maxStoredBytes, {-2} when an expectation
-- failed, {-3} when the partition is fenced for a pending barrier (nothing changed in any of
-- these cases: a fenced send goes to the barrier hold, unconflated, like every send accepted
-- while a barrier is pending; merging into a message accepted before the barrier would
-- deliver what was sent after it first). (Go names, replies.go: -1 keyedOverQuota,
-- -2 keyedExpectFailed, -3 keyedFenced.)
if redis.call('EXISTS', KEYS[9]) == 1 then return {-3} end
local now = tonumber(ARGV[1])
local ea = tonumber(ARGV[4])
bkeys(10)
PJ = ARGV[6]
local view = {} -- key -> {id, ver, size} of the message that will wait after the steps so far; false: none
local steps, add = {}, 0
for i = 7, #ARGV, 5 do
  local id, p, key, expect = ARGV[i], ARGV[i + 1], ARGV[i + 3], ARGV[i + 4]
  local size = psize(p)
  if key == '' then
    steps[#steps + 1] = {'n', id, p, ARGV[i + 2]}
    add = add + size
  else
    local cur = view[key]
    if cur == nil then
      local wid, ver, mv, at = kwaiting(KEYS[7], KEYS[2], KEYS[3], KEYS[6], key, now)
      if wid then cur = {wid, ver, psize(mv, at)} else cur = false end
    end
    if expect == 'n' and cur then return {-2} end
    if #expect > 16 and (not cur or cur[1] ~= string.sub(expect, 1, 16) or cur[2] ~= tonumber(string.sub(expect, 17))) then
      return {-2}
    end
    if cur then
      steps[#steps + 1] = {'m', cur[1], p, key, cur[2] + 1}
      add = add + size - cur[3]
      view[key] = {cur[1], cur[2] + 1, size}
    else
      steps[#steps + 1] = {'n', id, p, ARGV[i + 2], key}
      add = add + size
      view[key] = {id, 1, size}
    end
  end
end
local limit = tonumber(ARGV[5])
if PK and limit > 0 and add > 0 and ptotal() + add > limit then return {-1} end
local out = {}
for _, s in ipairs(steps) do
  if s[1] == 'n' then
    redis.call('HSET', KEYS[2], s[2], mvalue(fmt_state(0, 0, ea, now), s[3]))
    redis.call('ZADD', KEYS[1], s[4], s[2])
    redis.call('ZADD', KEYS[4], ARGV[4], s[2])
    if s[5] then
      local old = redis.call('HGET', KEYS[7], s[5])
      if old then redis.call('HDEL', KEYS[8], string.sub(old, 1, 16)) end
      redis.call('HSET', KEYS[7], s[5], s[2] .. '1')
      redis.call('HSET', KEYS[8], s[2], s[5])
    end
    out[#out + 1] = s[2]; out[#out + 1] = 0
  else
    local _, _, _, _, mv, at = mstate(KEYS[2], KEYS[3], s[2])
    redis.call('HSET', KEYS[2], s[2], string.sub(mv, 1, at - 1) .. s[3])
    redis.call('HSET', KEYS[7], s[4], s[2] .. s[5])
    out[#out + 1] = s[2]; out[#out + 1] = 1
  end
end
bchg(add, 0)
local rate = bump(KEYS[5], #steps)
redis.call('PUBLISH', ARGV[2], ARGV[3])
return {rate, out}
