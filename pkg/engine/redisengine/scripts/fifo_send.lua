-- fifo_send: store fifo messages in their groups' partition (the second step of a fifo send, and
-- the insert of a dead-letter move into a fifo queue).
-- KEYS: 1 r, 2 m, 3 s, 4 x, 5 send counter of the current second, 6 gm, 7 gi, 8 gs, 9 gl,
--       10 gt, 11 dd, 12 f, 13 gp, 14 B, [15 P] (stored bytes: prelude.lua)
-- ARGV: 1 now ms, 2 wake channel, 3 wake payload, 4 dedup outcomes older than this (ms) are
--       trimmed, 5 the project's maxStoredBytes (0: none; checked only with P), 6 project id;
--       then 8 per message: id, payload, visibleAt ms, expiresAt ms, sentAt ms,
--       group prefix ("<g>\0" .. 16 hex digits of seq), seq, "1" when it holds a dedup
--       reservation, "2" when it is a move bringing back a message of a parked group to its
--       old place (the prefix its gp record names; prelude.lua: gpark), else "0"
-- Returns {sends in the current second, {one code per message}}:
--   1 stored (or already there: a retried insert of the same id changes nothing; or stored
--     here before under a dedup reservation, its S record in dd, even if gone since),
--   2 refused: its dedup reservation was fenced (fifo_verify_dedup) by a sender that found it pending,
--   3 refused: its group already holds a higher sequence number here (a concurrent send to
--     the group landed first; the caller takes a fresh number, so order = sequence order); or, for a
--     message brought back ("2"), its group's parking no longer names it (released since):
--     the caller stores it as a new message.
-- The last message of a parking brought back ends it (prelude.lua: gunpark).
-- {-1}: the messages to store would take the project past maxStoredBytes; nothing stored.
-- (Go names, replies.go: 1 fifoStored, 2 fifoReservationFenced, 3 fifoSequenceBehind,
-- -1 fifoOverQuota.)
local now = tonumber(ARGV[1])
local codes, store, hw, hwset, gsc, gnew, back = {}, {}, {}, {}, {}, {}, {}
local PG = {r = KEYS[1], f = KEYS[12], gm = KEYS[6], gs = KEYS[8], gl = KEYS[9], gp = KEYS[13]}
bkeys(14)
PJ = ARGV[6]
local add = 0
for i = 7, #ARGV, 8 do
  local id, prefix, seq = ARGV[i], ARGV[i + 5], tonumber(ARGV[i + 6])
  local g = gid_of(prefix)
  if hw[g] == nil then hw[g] = tonumber(redis.call('HGET', KEYS[10], g) or '0') end
  if redis.call('HEXISTS', KEYS[2], id) == 1 then
    codes[#codes + 1] = 1
  elseif ARGV[i + 7] == '1' and redis.call('ZSCORE', KEYS[11], 'S' .. id) then
    -- stored here before under this reservation's id (and perhaps acknowledged since): an
    -- earlier attempt of the same message (a topic's copy retried by another holder)
    codes[#codes + 1] = 1
  elseif ARGV[i + 7] == '1' and redis.call('ZSCORE', KEYS[11], 'A' .. id) then
    codes[#codes + 1] = 2
  elseif ARGV[i + 7] == '2' then
    local r = redis.call('HGET', KEYS[13], 'i' .. id)
    local ep = gparkinfo(PG, g)
    if r and ep and r == ep .. '|' .. prefix then
      codes[#codes + 1] = 1
      back[#back + 1] = {id, g}
      store[#store + 1] = i
      add = add + psize(ARGV[i + 1])
    else
      codes[#codes + 1] = 3
    end
  elseif seq <= hw[g] then
    codes[#codes + 1] = 3
  else
    codes[#codes + 1] = 1
    hw[g] = seq
    hwset[g] = ARGV[i + 6]
    if gsc[g] == nil then
      gsc[g] = redis.call('ZSCORE', KEYS[8], g) or redis.call('ZSCORE', KEYS[9], g)
    end
    if not gsc[g] then
      gsc[g] = true
      gnew[g] = {tonumber(ARGV[i + 2]), seq} -- a new (or emptied) group: its head is this message
    end
    store[#store + 1] = i
    add = add + psize(ARGV[i + 1])
  end
end
local limit = tonumber(ARGV[5])
if PK and limit > 0 and add > 0 and ptotal() + add > limit then return {-1} end
local old = redis.call('ZRANGEBYSCORE', KEYS[11], '-inf', ARGV[4], 'LIMIT', 0, 100)

for _, i in ipairs(store) do
  local id = ARGV[i]
  redis.call('HSET', KEYS[2], id, mvalue(fmt_state(pbase(ARGV[i + 1]), 0, tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4])), ARGV[i + 1]))
  redis.call('ZADD', KEYS[1], ARGV[i + 2], id)
  redis.call('ZADD', KEYS[4], ARGV[i + 3], id)
  redis.call('ZADD', KEYS[6], 0, ARGV[i + 5] .. id)
  redis.call('HSET', KEYS[7], id, ARGV[i + 5])
  if ARGV[i + 7] == '1' then redis.call('ZADD', KEYS[11], ARGV[1], 'S' .. id) end
end
for g, v in pairs(hwset) do redis.call('HSET', KEYS[10], g, v) end
local G = {gs = KEYS[8], gl = KEYS[9]}
for g, pl in pairs(gnew) do gset(G, g, pl, now) end
for _, b in ipairs(back) do
  redis.call('HDEL', KEYS[13], 'i' .. b[1])
  local ep, n, reason = gparkinfo(PG, b[2])
  if not ep then -- not expected: its check above saw the parking
  elseif n <= 1 then
    gunpark(PG, b[2], now)
  else
    redis.call('HSET', KEYS[13], 'g' .. b[2], ep .. '|' .. (n - 1) .. '|' .. reason)
  end
end
if #old > 0 then redis.call('ZREM', KEYS[11], unpack(old)) end
bchg(add, 0)
local rate = bump(KEYS[5], #store)
if #store > 0 then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return {rate, codes}
