-- receive: claim up to max visible messages of one partition.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 o (dead-letter outbox)
-- ARGV: 1 now ms, 2 max, 3 visibility ms, 4 maxReceiveCount (0: no redrive policy),
--       5 scan limit (candidates examined at most), 6 redrive reason
-- Returns: {nextVisibleAt ms (0: none; only computed when nothing is returned),
--           {id, state, payload, ...} of the claimed messages (state after the claim),
--           {id, outbox value, ...} of messages moved to the outbox}
-- Candidates are the lowest scores <= now of r and f merged by (score, id). Expired ones are
-- deleted, ones received maxReceiveCount times move to the outbox. All reads come first.
local now = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local vis = tonumber(ARGV[3])
local maxrc = tonumber(ARGV[4])
local scan = tonumber(ARGV[5])
local K = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]}

local cr = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, scan)
local cf = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, scan)
local cands = {}
local i, j = 1, 1
while #cands < scan and (i <= #cr or j <= #cf) do
  local fromR
  if i > #cr then
    fromR = false
  elseif j > #cf then
    fromR = true
  else
    local sr, sf = tonumber(cr[i + 1]), tonumber(cf[j + 1])
    fromR = sr < sf or (sr == sf and cr[i] < cf[j])
  end
  if fromR then
    cands[#cands + 1] = cr[i]; i = i + 2
  else
    cands[#cands + 1] = cf[j]; j = j + 2
  end
end

local take, drop, dead = {}, {}, {}
local examined = 0
for _, id in ipairs(cands) do
  if #take >= max then break end
  examined = examined + 1
  local a, ra, ea, sa, p, old = mread(KEYS[3], KEYS[4], id)
  local payload = false
  if a and ea > now then payload = p end
  if not payload then
    drop[#drop + 1] = id -- expired, or an index entry without a message
  elseif maxrc > 0 and a >= maxrc then
    dead[#dead + 1] = {id, outbox_value(now, sa, ARGV[6], payload)}
  else
    take[#take + 1] = {id, fmt_state(a + 1, now, ea, sa), payload, old}
  end
end

local next_at = 0
if #take == 0 then
  if examined < #cands or #cr == 2 * scan or #cf == 2 * scan then
    next_at = now -- unexamined candidates remain: look again at once
  else
    local nr = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    local nf = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if #nr > 0 then next_at = tonumber(nr[2]) end
    if #nf > 0 and (next_at == 0 or tonumber(nf[2]) < next_at) then next_at = tonumber(nf[2]) end
  end
end

-- Writes.
for _, id in ipairs(drop) do del(K, id) end
local outd = {}
for _, d in ipairs(dead) do
  redis.call('HSET', KEYS[6], d[1], d[2])
  del(K, d[1])
  outd[#outd + 1] = d[1]; outd[#outd + 1] = d[2]
end
local outt = {}
local deadline = ms(now + vis)
for _, t in ipairs(take) do
  redis.call('HSET', KEYS[3], t[1], mvalue(t[2], t[3]))
  if t[4] then redis.call('HDEL', KEYS[4], t[1]) end
  redis.call('ZREM', KEYS[1], t[1])
  redis.call('ZADD', KEYS[2], deadline, t[1])
  outt[#outt + 1] = t[1]; outt[#outt + 1] = t[2]; outt[#outt + 1] = t[3]
end
return {next_at, outt, outd}
