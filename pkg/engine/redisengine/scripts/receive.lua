-- receive: claim up to max visible messages of one partition.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 o (dead-letter outbox), 7 l (list), 8 lh (list head
--       position: elements ever removed from the head of l), 9 B, [10 P] (stored bytes:
--       expired messages dropped here leave the count, redriven ones move to the outbox's)
-- ARGV: 1 now ms, 2 max, 3 visibility ms, 4 maxReceiveCount (0: no redrive policy),
--       5 scan limit (candidates examined at most), 6 redrive reason
-- Returns: {nextVisibleAt ms (0: none; only computed when nothing is returned),
--           {id, value, ...} of the claimed messages (value: their m value after the claim,
--           state then payload, see mstate),
--           {id, outbox value, ...} of messages moved to the outbox,
--           1 when stored bytes changed else 0}
-- Candidates are the lowest scores <= now of r and f and the head of l (score: its send time),
-- merged by score. Expired ones are deleted, ones received maxReceiveCount times move to the
-- outbox. A message taken from l moves into m, f and x. All reads come first, and every write
-- that needs memory comes before anything is removed, so a script refused for lack of memory
-- stops before it changed anything.
local now = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local vis = tonumber(ARGV[3])
local maxrc = tonumber(ARGV[4])
local scan = tonumber(ARGV[5])
local K = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]}
bkeys(9)
local gone, moved, counted = 0, 0, {}

local cr = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, scan)
local cf = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, scan)
-- The list's elements are all visible and rarely expired: read what is wanted and a little
-- more, not the whole scan.
local lwant = max + 2
local cl = redis.call('LRANGE', KEYS[7], 0, lwant - 1)
-- Merge by score; a list element's fields are parsed once here. Each candidate is
-- {id, score, source} (source 'r' or 'f'), or for the list {false, sa, 'l', ea, element,
-- sa string, ea string, payload start}.
local cands = {}
local i, j, k = 1, 1, 1
local lnext
while #cands < scan and (i <= #cr or j <= #cf or k <= #cl) do
  local best, bs
  if i <= #cr then best, bs = 'r', tonumber(cr[i + 1]) end
  if j <= #cf then
    local s = tonumber(cf[j + 1])
    if not best or s < bs then best, bs = 'f', s end
  end
  if lnext == nil and k <= #cl then
    local v = cl[k]
    local sa, ea, sas, eas, at = lfields(v)
    lnext = {false, sa or 0, 'l', ea or 0, v, sas, eas, at}
  end
  if lnext and (not best or lnext[2] < bs) then best = 'l' end
  if best == 'r' then
    cands[#cands + 1] = {cr[i], 'r'}; i = i + 2
  elseif best == 'f' then
    cands[#cands + 1] = {cf[j], 'f'}; j = j + 2
  else
    cands[#cands + 1] = lnext; lnext = nil; k = k + 1
  end
end

local prefix = '1|' .. ARGV[1] .. '|' -- the state of a message taken from l: attempt 1, now
local take, drop, dead = {}, {}, {}
local fromlist = 0
local examined = 0
for _, c in ipairs(cands) do
  if #take >= max then break end
  examined = examined + 1
  if c[3] == 'l' then
    fromlist = fromlist + 1
    -- Never received, so never dead-lettered here; a malformed element is dropped.
    if c[4] > now and c[8] then
      local v = c[5]
      -- take: {id, m value, old layout, source, expiry string}
      take[#take + 1] = {string.sub(v, 1, 16), prefix .. c[7] .. '|' .. c[6] .. '|' .. string.sub(v, c[8]), false, 'l', c[7]}
    elseif c[8] then
      gone = gone + psize(c[5], c[8])
    end
  else
    local id = c[1]
    local a, ra, ea, sa, p, old = mread(KEYS[3], KEYS[4], id)
    local payload = false
    if a and ea > now then payload = p end
    if not payload then
      drop[#drop + 1] = id -- expired, or an index entry without a message
      if a and not counted[id] then gone = gone + psize(p) end
      counted[id] = true
    elseif maxrc > 0 and a >= maxrc then
      dead[#dead + 1] = {id, outbox_value(now, sa, ARGV[6], payload)}
      moved = moved + psize(payload)
    else
      take[#take + 1] = {id, mvalue(fmt_state(a + 1, now, ea, sa), payload), old, c[2]}
    end
  end
end

local next_at = 0
if #take == 0 then
  if examined < #cands or #cr == 2 * scan or #cf == 2 * scan or #cl == lwant then
    next_at = now -- unexamined candidates remain: look again at once
  else
    local nr = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    local nf = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if #nr > 0 then next_at = tonumber(nr[2]) end
    if #nf > 0 and (next_at == 0 or tonumber(nf[2]) < next_at) then next_at = tonumber(nf[2]) end
  end
end

-- Writes that need memory.
local outd = {}
for _, d in ipairs(dead) do
  redis.call('HSET', KEYS[6], d[1], d[2])
  outd[#outd + 1] = d[1]; outd[#outd + 1] = d[2]
end
local outt = {}
local hset, fadd, xadd, rrem, srem = {}, {}, {}, {}, {}
local deadline = ms(now + vis)
for _, t in ipairs(take) do
  hset[#hset + 1] = t[1]; hset[#hset + 1] = t[2]
  fadd[#fadd + 1] = deadline; fadd[#fadd + 1] = t[1]
  if t[4] == 'l' then
    xadd[#xadd + 1] = t[5]; xadd[#xadd + 1] = t[1]
  else
    rrem[#rrem + 1] = t[1]
    if t[3] then srem[#srem + 1] = t[1] end
  end
  outt[#outt + 1] = t[1]; outt[#outt + 1] = t[2]
end
if #hset > 0 then
  redis.call('HSET', KEYS[3], unpack(hset))
  redis.call('ZADD', KEYS[2], unpack(fadd))
end
if #xadd > 0 then redis.call('ZADD', KEYS[5], unpack(xadd)) end
-- Removals.
for _, id in ipairs(drop) do del(K, id) end
for _, d in ipairs(dead) do del(K, d[1]) end
if #rrem > 0 then redis.call('ZREM', KEYS[1], unpack(rrem)) end
if #srem > 0 then redis.call('HDEL', KEYS[4], unpack(srem)) end
if fromlist > 0 then
  redis.call('LTRIM', KEYS[7], fromlist, -1)
  redis.call('INCRBY', KEYS[8], fromlist)
end
bchg(-gone - moved, moved)
local changed = 0
if gone + moved > 0 then changed = 1 end
return {next_at, outt, outd, changed}
