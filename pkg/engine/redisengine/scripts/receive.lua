-- receive: claim up to max visible messages of one partition.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 o (dead-letter outbox), 7 l (list), 8 lh (list head
--       position: elements ever removed from the head of l), 9 k, 10 ki (conflation keys: a
--       message taken or dropped here no longer waits and frees its key), 11 B, [12 P]
--       (stored bytes: expired messages dropped here leave the count, redriven ones move to
--       the outbox's)
-- ARGV: 1 now ms, 2 max, 3 visibility ms, 4 maxReceiveCount (0: no redrive policy),
--       5 scan limit (candidates examined at most), 6 redrive reason, 7 1 on an at-most-once
--       queue: the claimed messages are removed here, not put in flight (their bytes leave
--       the count in this same step), 8 attribute filter (prelude.lua: fparse; "": none),
--       9 scan byte budget (with a filter: bytes of stored messages read at most, and the
--       one that crosses it; filter.MaxScanBytes; 0: no byte bound)
-- Returns: {nextVisibleAt ms (0: none; only computed when nothing is returned),
--           {id, value, ...} of the claimed messages (value: their m value after the claim,
--           state then payload, see mstate),
--           {id, outbox value, ...} of messages moved to the outbox,
--           1 when stored bytes changed else 0,
--           {priority, ...} of the claimed messages, in their order,
--           candidates examined, bytes of stored messages read (with a filter; list
--           elements read but not examined included)}
-- Candidates are, from the highest priority band down (prelude.lua: BAND), the lowest scores
-- <= now of r and f and, in band 0, the head of l (score: its send time), merged by score.
-- An empty band costs one range read of each zset, so the work stays bounded by the scan.
-- Expired ones are deleted, ones received maxReceiveCount times move to the outbox. A
-- message taken from l moves into m, f and x. All reads come first, and every write that
-- needs memory comes before anything is removed, so a script refused for lack of memory stops
-- before it changed anything.
-- With a filter (docs/delivery-options.md#filtered-receive-and-browse), a candidate whose
-- attributes do not match is left exactly as it is (before the dead-letter decision: its receives
-- are not counted against it); the list is read up to the scan too, and a list element taken behind
-- one left in place is cut out where it is (LSET to a marker, LREM: as delete.lua does). Unmatched
-- candidates are not a reason to look again at once: the caller waits for a wake-up as for an empty
-- queue. A filtered receive also stops once it read ARGV 9 bytes of candidates (the list is read a
-- few elements at a time for that), so one call never reads up to scan whole messages.
local now = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local vis = tonumber(ARGV[3])
local maxrc = tonumber(ARGV[4])
local scan = tonumber(ARGV[5])
local amo = ARGV[7] == '1'
local flt, fn = false, 0
if ARGV[8] ~= '' then flt, fn = fparse(ARGV[8]) end
local sbytes = tonumber(ARGV[9] or '0') or 0
if sbytes <= 0 then sbytes = math.huge end -- none given: the candidate bound alone
local read = 0 -- bytes of candidates read (filtered)
local K = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]}
bkeys(11)
local gone, moved, counted = 0, 0, {}

-- Bands above 0 first, highest first; each candidate is {id, source, band}.
local cands = {}
local full = false -- a band read was cut short by the scan: candidates may remain
for b = math.max(ztop(KEYS[1]), ztop(KEYS[2])), 1, -1 do
  local room = scan - #cands
  if room <= 0 then full = true; break end
  local lo, hi = ms(b * BAND), ms(b * BAND + now)
  local br = redis.call('ZRANGEBYSCORE', KEYS[1], lo, hi, 'WITHSCORES', 'LIMIT', 0, room)
  local bf = redis.call('ZRANGEBYSCORE', KEYS[2], lo, hi, 'WITHSCORES', 'LIMIT', 0, room)
  if #br == 2 * room or #bf == 2 * room then full = true end
  local x, y = 1, 1
  while #cands < scan and (x <= #br or y <= #bf) do
    if y > #bf or (x <= #br and tonumber(br[x + 1]) < tonumber(bf[y + 1])) then
      cands[#cands + 1] = {br[x], 'r', b}; x = x + 2
    else
      cands[#cands + 1] = {bf[y], 'f', b}; y = y + 2
    end
  end
end
local cr, cf = {}, {}
if #cands < scan then
  cr = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, scan)
  cf = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, scan)
else
  full = true
end
-- The list's elements are all visible and rarely expired: read what is wanted and a little
-- more, not the whole scan.
local lwant = max + 2
if flt then lwant = scan end
local cl = {}
local lread, lexam = 0, 0 -- bytes of list elements read, and of those examined (filtered)
if #cands < scan and flt then
  -- A few elements at a time, up to the byte budget: an element is a whole message. After
  -- the first 8, each read takes what the budget left holds at their average size (at least
  -- one), so the budget is passed by about one element, not by a whole read.
  local step = 8
  while #cl < lwant and lread < sbytes do
    local upto = math.min(#cl + step, lwant)
    local chunk = redis.call('LRANGE', KEYS[7], #cl, upto - 1)
    for _, v in ipairs(chunk) do cl[#cl + 1] = v; lread = lread + #v end
    if #cl < upto then break end
    step = math.max(1, math.min(8, math.floor((sbytes - lread) * #cl / math.max(lread, 1))))
  end
elseif #cands < scan then
  cl = redis.call('LRANGE', KEYS[7], 0, lwant - 1)
end
-- Merge band 0 by score; a list element's fields are parsed once here. Each candidate is
-- {id, source, 0} (source 'r' or 'f'), or for the list {false, sa, 'l', ea, element,
-- sa string, ea string, payload start, list index}.
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
    lnext = {false, sa or 0, 'l', ea or 0, v, sas, eas, at, k - 1}
  end
  if lnext and (not best or lnext[2] < bs) then best = 'l' end
  if best == 'r' then
    cands[#cands + 1] = {cr[i], 'r', 0}; i = i + 2
  elseif best == 'f' then
    cands[#cands + 1] = {cf[j], 'f', 0}; j = j + 2
  else
    cands[#cands + 1] = lnext; lnext = nil; k = k + 1
  end
end

local prefix = '1|' .. ARGV[1] .. '|' -- the state of a message taken from l: attempt 1, now
local take, drop, dead = {}, {}, {}
local fromlist = 0
local lkept, lcut = false, {} -- a list element left in place; list indexes cut out behind it
local examined = 0
for _, c in ipairs(cands) do
  if #take >= max then break end
  if flt and read >= sbytes and examined > 0 then break end -- the byte budget is spent
  examined = examined + 1
  if flt and c[3] == 'l' then read = read + #c[5]; lexam = lexam + #c[5] end
  if c[3] == 'l' and flt and c[8] and c[4] > now and not fmatch(flt, fn, c[5], c[8]) then
    lkept = true -- stays where it is
  elseif c[3] == 'l' then
    if lkept then lcut[#lcut + 1] = c[9] else fromlist = fromlist + 1 end
    -- Never received, so never dead-lettered here; a malformed element is dropped.
    if c[4] > now and c[8] then
      local v = c[5]
      -- take: {id, m value, old layout, source, expiry string (l only), band}
      take[#take + 1] = {string.sub(v, 1, 16), prefix .. c[7] .. '|' .. c[6] .. '|' .. string.sub(v, c[8]), false, 'l', c[7], 0}
      if amo then gone = gone + psize(v, c[8]) end
    elseif c[8] then
      gone = gone + psize(c[5], c[8])
    end
  else
    local id = c[1]
    local a, ra, ea, sa, p, old, cn = mread(KEYS[3], KEYS[4], id)
    if flt and p then read = read + #p end
    local payload = false
    if a and ea > now then payload = p end
    if not payload then
      drop[#drop + 1] = id -- expired, or an index entry without a message
      if a and not counted[id] then gone = gone + psize(p) end
      counted[id] = true
    elseif flt and not fmatch(flt, fn, payload, 1) then -- left as it is
    elseif maxrc > 0 and a - cn - pbase(payload) >= maxrc then -- cancelled deliveries do not count
      dead[#dead + 1] = {id, outbox_value(now, sa, ARGV[6], payload, a)}
      moved = moved + psize(payload)
    else
      take[#take + 1] = {id, mvalue(fmt_state(a + 1, now, ea, sa, cn), payload), old, c[2], false, c[3]}
      if amo then gone = gone + psize(payload) end
    end
  end
end

local next_at = 0
if #take == 0 then
  if not flt and (full or examined < #cands or #cr == 2 * scan or #cf == 2 * scan or #cl == lwant) then
    next_at = now -- unexamined candidates remain: look again at once
  else
    local nr, nf = znext(KEYS[1], now), znext(KEYS[2], now)
    next_at = nr
    if nf > 0 and (next_at == 0 or nf < next_at) then next_at = nf end
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
local prio = {}
if amo then
  -- Handed out and gone in one step, never in flight: a message of l leaves by the LTRIM
  -- below, one of r with every trace (and its key) like an expired one.
  for _, t in ipairs(take) do
    if t[4] ~= 'l' then drop[#drop + 1] = t[1] end
    outt[#outt + 1] = t[1]; outt[#outt + 1] = t[2]
    prio[#prio + 1] = t[6]
  end
  take = {}
end
local dl = {} -- each band's in-flight deadline, formatted once
for _, t in ipairs(take) do
  hset[#hset + 1] = t[1]; hset[#hset + 1] = t[2]
  local d = dl[t[6]]
  if not d then d = ms(t[6] * BAND + now + vis); dl[t[6]] = d end
  fadd[#fadd + 1] = d; fadd[#fadd + 1] = t[1]
  prio[#prio + 1] = t[6]
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
-- Only messages of r can be keyed; one EXISTS spares unkeyed queues every lookup.
if (#rrem > 0 or #drop > 0) and redis.call('EXISTS', KEYS[10]) == 1 then
  for _, id in ipairs(rrem) do unkey(KEYS[9], KEYS[10], id) end
  for _, id in ipairs(drop) do unkey(KEYS[9], KEYS[10], id) end
end
if #srem > 0 then redis.call('HDEL', KEYS[4], unpack(srem)) end
if #lcut > 0 then
  for _, x in ipairs(lcut) do redis.call('LSET', KEYS[7], x, '\0taken') end
  redis.call('LREM', KEYS[7], #lcut, '\0taken')
end
if fromlist > 0 then
  redis.call('LTRIM', KEYS[7], fromlist, -1)
  redis.call('INCRBY', KEYS[8], fromlist)
end
bchg(-gone - moved, moved)
local changed = 0
if gone + moved > 0 then changed = 1 end
return {next_at, outt, outd, changed, prio, examined, read + lread - lexam}
