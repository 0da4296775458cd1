-- move_take: take chosen visible messages of a standard partition out of it, into its move
-- outbox (the first step of a move task's move; move.go finishes it), counting them for the
-- task in the same step.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 l, 7 lh, 8 mo (move outbox), 9 mt (move counters),
--       10 k, 11 ki (conflation keys: a keyed message taken here no longer waits and frees
--       its key), 12 B, [13 P] (stored bytes: the moved bytes stay in the partition, in its
--       outbox count, until the destination has the message)
-- ARGV: 1 now ms, 2 task tag; then 3 per message: id (16 bytes), list position (browse's,
--       lh + index; -1 for a message of r or f), destination (the outbox entry's reason)
-- Returns: {id, outbox value, ...} of the messages taken. A message no longer visible (received,
-- settled, expired, already taken) is left alone. A list element can only leave from the head
-- (browse positions count from it), so the list's elements before the last chosen one that are
-- not chosen become never-received messages of r (score: their send time, which keeps their
-- place among the partition's visible messages).
local now = tonumber(ARGV[1])
local K = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]}
bkeys(12)
local head = tonumber(redis.call('GET', KEYS[7]) or '0')
local seen, fromlist, take = {}, {}, {}
local imax = -1
for i = 3, #ARGV, 3 do
  local id, pos, dst = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  if not seen[id] then
    seen[id] = true
    if pos >= 0 then
      local idx = pos - head
      if idx >= 0 then
        local v = redis.call('LINDEX', KEYS[6], idx)
        if v and string.sub(v, 1, 16) == id then
          fromlist[idx] = dst
          if idx > imax then imax = idx end
        end
      end
    else
      local rs = tonumber(redis.call('ZSCORE', KEYS[1], id))
      local fs = tonumber(redis.call('ZSCORE', KEYS[2], id))
      if (rs and ptime(rs) <= now) or (fs and ptime(fs) <= now) then
        local a, ra, ea, sa, p = mread(KEYS[3], KEYS[4], id)
        if a and ea > now then take[#take + 1] = {id, outbox_value(now, sa, dst, p, a), psize(p)} end
      end
    end
  end
end
local conv, gone = {}, 0
if imax >= 0 then
  for i, v in ipairs(redis.call('LRANGE', KEYS[6], 0, imax)) do
    local sa, ea, sas, eas, at = lfields(v)
    local id = string.sub(v, 1, 16)
    local dst = fromlist[i - 1]
    if not at then
      -- malformed: dropped, as receive drops it
    elseif ea <= now then
      gone = gone + psize(v, at)
    elseif dst then
      take[#take + 1] = {id, outbox_value(now, sa, dst, string.sub(v, at), 0), psize(v, at), true}
    else
      conv[#conv + 1] = {id, sas, eas, string.sub(v, at)}
    end
  end
end
-- Writes that need memory, then removals.
for _, c in ipairs(conv) do
  redis.call('HSET', KEYS[3], c[1], mvalue('0|0|' .. c[3] .. '|' .. c[2], c[4]))
  redis.call('ZADD', KEYS[1], c[2], c[1])
  redis.call('ZADD', KEYS[5], c[3], c[1])
end
local out, moved = {}, 0
for _, t in ipairs(take) do
  redis.call('HSET', KEYS[8], t[1], t[2])
  out[#out + 1] = t[1]; out[#out + 1] = t[2]
  moved = moved + t[3]
end
if #take > 0 then redis.call('HINCRBY', KEYS[9], ARGV[2], #take) end
for _, t in ipairs(take) do
  if not t[4] then
    del(K, t[1])
    unkey(KEYS[10], KEYS[11], t[1])
  end
end
if imax >= 0 then
  redis.call('LTRIM', KEYS[6], imax + 1, -1)
  redis.call('INCRBY', KEYS[7], imax + 1)
end
bchg(-moved - gone, moved)
return out
