-- copy: store a binding's batch of topic entries in partition 0 of a standard queue, exactly
-- once per binding: an entry at or below the binding's high-water mark was copied before and
-- is skipped, and so is an entry whose message id the partition holds (a copy of an earlier
-- binding of the same queue and topic: unbound, then bound again from further back); the
-- others are stored as send.lua stores a delayed send (m, r and x: never l, so that a held
-- copy is found by its id in m; same bytes and wake-up), keeping their message ids, and the
-- mark rises to the batch's last sequence, all in one step (engine.Topics: Copy).
-- KEYS: 1 r, 2 m, 3 s, 4 x, 5 l (not written), 6 bf (the partition's barrier fence), 7 tc (binding ->
--       high-water mark), 8 B, [9 P (single server)]
-- ARGV: 1 now ms, 2 wake channel, 3 wake payload, 4 expiresAt ms, 5 the project's
--       maxStoredBytes (0: none; checked only with P), 6 project id, 7 binding id, 8 the
--       batch's last sequence, 9 visibleAt ms; then 4 per message: sequence, id (16 raw
--       bytes), payload, "1" when it may be stored ("0": its bytes were refused; Cluster)
-- Returns: {stored, {code, ...}} with per message 1 stored, 2 copied before (skipped), 0
-- refused for maxStoredBytes; {-2} when the partition is fenced for a barrier (nothing done).
-- (Go name, replies.go: -2 copyFenced.)
if redis.call('EXISTS', KEYS[6]) == 1 then return {-2} end
local now, ea = tonumber(ARGV[1]), tonumber(ARGV[4])
bkeys(8)
PJ = ARGV[6]
local mark = tonumber(redis.call('HGET', KEYS[7], ARGV[7]) or '0')
local limit = tonumber(ARGV[5])
local base = 0
if PK and limit > 0 then base = ptotal() end
local codes, add, n = {}, 0, 0
for i = 10, #ARGV, 4 do
  local seq, id, p = tonumber(ARGV[i]), ARGV[i + 1], ARGV[i + 2]
  if seq <= mark or redis.call('HEXISTS', KEYS[2], id) == 1 then
    codes[#codes + 1] = 2
  else
    local size = psize(p)
    if ARGV[i + 3] ~= '1' or (PK and limit > 0 and base + add + size > limit) then
      codes[#codes + 1] = 0
    else
      add, n = add + size, n + 1
      codes[#codes + 1] = 1
      redis.call('HSET', KEYS[2], id, mvalue(fmt_state(0, 0, ea, now), p))
      redis.call('ZADD', KEYS[1], ARGV[9], id)
      redis.call('ZADD', KEYS[4], ARGV[4], id)
    end
  end
end
if tonumber(ARGV[8]) > mark then redis.call('HSET', KEYS[7], ARGV[7], ARGV[8]) end
bchg(add, 0)
if n > 0 then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return {n, codes}
