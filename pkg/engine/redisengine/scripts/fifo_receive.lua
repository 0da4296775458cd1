-- fifo_receive: claim up to max messages of a fifo partition, a group's batch at a time.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 gm, 7 gi, 8 gs, 9 gl, 10 o (dead-letter outbox),
--       11 gb, 12 gx (group bindings, prelude.lua), 13 gp (parked groups), 14 B, [15 P]
--       (stored bytes)
-- ARGV: 1 now ms, 2 max, 3 visibility ms, 4 maxReceiveCount (0: no redrive policy),
--       5 groups looked at at most, 6 messages looked at at most, 7 redrive reason,
--       8 attribute filter (prelude.lua: fparse; "": none), 9 scan byte budget (with a
--       filter: bytes of stored messages read at most, and the one that crosses it; 0: none),
--       10 consumerId on an exclusive queue ("": sequenced), 11 affinity ms, 12 the most
--       groups a consumer holds bound, 13 groups the consumer holds bound in other partitions,
--       14 poison policy ("" continue, "park", "parkGroup"), 15 the dead-letter reason of the
--       messages that follow a parkGroup dead-letter
-- Returns: like receive.lua {nextVisibleAt ms, {id, state, payload, ...}, {id, outbox value, ...},
--          1 when stored bytes changed else 0, {} (no priorities), messages examined,
--          bytes of stored messages read (with a filter)}
-- Available groups (gs, and gl entries whose time has come) are served oldest head (lowest
-- sequence number) first; from each, consecutive messages are taken from its head while they
-- are visible, up to what is still wanted. Expired heads are deleted and heads received
-- maxReceiveCount times move to the outbox, and the group goes on with its next message (policy
-- continue), or is parked (prelude.lua: gpark) and gives nothing more (park), its later
-- messages following the dead one to the outbox in order (parkGroup). A
-- taken batch locks its group until its deadline (gl). All reads come first.
-- With a filter (docs/delivery-options.md#filtered-receive-and-browse) a group's batch ends at its
-- first message that does not match, which stays as it is (before the dead-letter decision): a
-- group whose head does not match gives nothing, and no group's order is broken. Unmatched heads
-- are not a reason to look again at once.
-- Exclusive (ARGV 10 set; engine/grouppolicy.go): the consumer's own live bindings are
-- candidates too, whatever their place; a group bound (live) to another consumer is passed
-- over; an unbound group (or one whose binding lapsed) is taken only while the consumer has
-- room under its cap, and taking a batch of a group binds it to the consumer (or refreshes
-- its binding). With nothing taken, the earliest lapse of a binding passed over is a time to
-- look again. Bindings idle for the affinity are pruned first (a bounded number per call).
local now = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local vis = tonumber(ARGV[3])
local maxrc = tonumber(ARGV[4])
local glimit = tonumber(ARGV[5])
local budget = tonumber(ARGV[6])
local K, G = fkeys()
G.gp = KEYS[13]
local policy = ARGV[14] or ''
local flt, fn = false, 0
if ARGV[8] ~= '' then flt, fn = fparse(ARGV[8]) end
local sbytes = tonumber(ARGV[9] or '0') or 0
if sbytes <= 0 then sbytes = math.huge end -- none given: the candidate bound alone
local read = 0 -- bytes of candidates read (filtered)
local deadline = now + vis
bkeys(14)
local gone, moved = 0, 0

local cid = ARGV[10] or ''
local excl = cid ~= ''
local aff, room, relook = 0, 0, 0
local binds = {} -- groups this receive binds or refreshes -> their previous owner (false: none)
local bound = {} -- groups live-bound to cid
if excl then
  aff = tonumber(ARGV[11])
  local cut = now - aff
  local idle = redis.call('ZRANGEBYSCORE', KEYS[12], '-inf', ms(cut), 'LIMIT', 0, 100)
  for _, mb in ipairs(idle) do
    local i = string.find(mb, '\0', 1, true)
    local c, g = string.sub(mb, 1, i - 1), string.sub(mb, i + 1)
    local owner, last = bparse(redis.call('HGET', KEYS[11], g))
    if owner == c and last <= cut then redis.call('HDEL', KEYS[11], g) end
    redis.call('ZREM', KEYS[12], mb)
  end
  local mine = redis.call('ZRANGEBYLEX', KEYS[12], '[' .. cid .. '\0', '(' .. cid .. '\1')
  room = tonumber(ARGV[12]) - tonumber(ARGV[13])
  for _, mb in ipairs(mine) do
    local g = string.sub(mb, #cid + 2)
    local owner, last = bparse(redis.call('HGET', KEYS[11], g))
    if owner == cid and last > cut then bound[g] = true; room = room - 1 end
  end
end

local cands = {}
local av = redis.call('ZRANGE', G.gs, 0, glimit - 1, 'WITHSCORES')
for i = 1, #av, 2 do cands[#cands + 1] = {av[i], tonumber(av[i + 1])} end
local due = redis.call('ZRANGEBYSCORE', G.gl, '-inf', ARGV[1], 'LIMIT', 0, glimit)
local sched = {}
for _, g in ipairs(due) do
  local head = redis.call('ZRANGEBYLEX', G.gm, glo(g), ghi(g), 'LIMIT', 0, 1)
  if #head > 0 then cands[#cands + 1] = {g, seq_of(head[1])} else sched[g] = false end
end
if excl then
  -- The consumer's own groups, available now, wherever they stand in the queue's order.
  local seen = {}
  for _, cd in ipairs(cands) do seen[cd[1]] = true end
  for g in pairs(bound) do
    if not seen[g] and gavail(G, g, now) then
      local head = redis.call('ZRANGEBYLEX', G.gm, glo(g), ghi(g), 'LIMIT', 0, 1)
      if #head > 0 then cands[#cands + 1] = {g, seq_of(head[1])} end
    end
  end
end
table.sort(cands, function(x, y) return x[2] < y[2] end)
local full = #av == 2 * glimit or #due == glimit
local take, drop, dead, over, parks = {}, {}, {}, {}, {}
local function prefix(w) return string.sub(w.m, 1, #w.m - 16) end
-- follow sends group g's messages after member m to the outbox behind it (parkGroup) and
-- answers them as {id, prefix} in order. None is in flight: the group was available.
local function follow(g, m, out)
  for _, fm in ipairs(redis.call('ZRANGEBYLEX', G.gm, '(' .. m, ghi(g))) do
    local w = {m = fm, id = string.sub(fm, -16)}
    local fa, _, fea, fsa, fp = mread(KEYS[3], KEYS[4], w.id)
    if fa and fea > now then
      dead[#dead + 1] = {w, outbox_value(now, fsa, ARGV[15], fp, fa)}
      moved = moved + psize(fp)
      out[#out + 1] = {w.id, prefix(w)}
    else
      drop[#drop + 1] = w
      if fa then gone = gone + psize(fp) end
    end
  end
end
local again = false
for c, cand in ipairs(cands) do
  local g = cand[1]
  if #take >= max then break end
  local open = true -- the receive may take from g
  if c > glimit and not bound[g] then
    if not excl then again = true; break end
    open = false -- past the scan bound, only the consumer's own groups are still served
  end
  if budget <= 0 then again = true; break end
  if flt and read >= sbytes and budget < tonumber(ARGV[6]) then again = true; break end
  if open and excl and not bound[g] then
    local owner, last = bparse(redis.call('HGET', KEYS[11], g))
    if owner and owner ~= cid and last > now - aff then
      open = false -- another consumer's: look again when its binding lapses, unless used
      if relook == 0 or last + aff < relook then relook = last + aff end
    elseif room <= 0 then
      open = false -- the consumer is at its cap
    end
  end
  if open then
  local want = max - #take
  local n = math.min(budget, want + WIN)
  local win = gread(G, g, 0, n + WIN)
  local skip = {}
  local took = 0
  for i = 1, math.min(n, #win) do
    if took >= want then break end
    if budget <= 0 then again = true; break end
    if flt and read >= sbytes and budget < tonumber(ARGV[6]) then again = true; break end
    budget = budget - 1
    local w = win[i]
    local a, ra, ea, sa, p, old, cn = mread(KEYS[3], KEYS[4], w.id)
    if flt and p then read = read + #p end
    local payload = false
    if a and ea > now then payload = p end
    if not payload then
      drop[#drop + 1] = w; skip[w.id] = true -- expired, or an index entry without a message
      if a then gone = gone + psize(p) end
    else
      local at = w.fs or w.rs or 0
      if at > now then break end -- in flight (retried after d) or delayed: the group waits
      if flt and not fmatch(flt, fn, payload, 1) then break end -- the group waits for another receive
      if maxrc > 0 and a - cn - pbase(payload) >= maxrc then -- cancelled deliveries do not count
        dead[#dead + 1] = {w, outbox_value(now, sa, ARGV[7], payload, a), pend(payload) and g}; skip[w.id] = true
        moved = moved + psize(payload)
        if policy ~= '' then -- the group parks: nothing more of it now
          local out = {{w.id, prefix(w)}}
          if policy == 'parkGroup' then follow(g, w.m, out) end
          parks[g] = out
          break
        end
      else
        take[#take + 1] = {w.id, fmt_state(a + 1, now, ea, sa, cn), payload, old}
        over[w.id] = deadline
        took = took + 1
      end
    end
  end
  sched[g] = gplace(win, skip, over)
  if excl and took > 0 then
    if not bound[g] then
      room = room - 1
      binds[g] = bparse(redis.call('HGET', KEYS[11], g)) or false
      bound[g] = true
    elseif binds[g] == nil then
      binds[g] = cid
    end
  end
  end
end

local next_at = 0
if #take == 0 then
  if not flt and not excl and (again or full) then
    next_at = now -- unexamined candidates remain: look again at once
  else
    local nx = redis.call('ZRANGEBYSCORE', G.gl, '(' .. ARGV[1], '(' .. ms(PARK), 'WITHSCORES', 'LIMIT', 0, 1)
    if #nx > 0 then next_at = tonumber(nx[2]) end
    for _, pl in pairs(sched) do
      if pl and not (flt and pl[1] <= now) then -- a group passed over is no reason either
        local at = math.max(pl[1], now)
        if next_at == 0 or at < next_at then next_at = at end
      end
    end
  end
  if relook > 0 and (next_at == 0 or relook < next_at) then next_at = math.max(relook, now) end
end

-- Writes.
for _, w in ipairs(drop) do fdel(K, G, w.id, prefix(w)) end
local outd = {}
for _, d in ipairs(dead) do
  redis.call('HSET', KEYS[10], d[1].id, d[2])
  fdel(K, G, d[1].id, prefix(d[1]))
  outd[#outd + 1] = d[1].id; outd[#outd + 1] = d[2]
  if d[3] then -- an endGroup message redriven: settled, its group's binding ends
    local owner = bparse(redis.call('HGET', KEYS[11], d[3]))
    if owner then redis.call('HDEL', KEYS[11], d[3]); redis.call('ZREM', KEYS[12], owner .. '\0' .. d[3]) end
  end
end
local outt = {}
for _, t in ipairs(take) do
  redis.call('HSET', KEYS[3], t[1], mvalue(t[2], t[3]))
  if t[4] then redis.call('HDEL', KEYS[4], t[1]) end
  redis.call('ZREM', KEYS[1], t[1])
  redis.call('ZADD', KEYS[2], ms(deadline), t[1])
  outt[#outt + 1] = t[1]; outt[#outt + 1] = t[2]; outt[#outt + 1] = t[3]
end
for g, out in pairs(parks) do gpark(G, g, out, ARGV[7]) end
for g, pl in pairs(sched) do gset(G, g, pl, now) end
for g, prev in pairs(binds) do
  if prev and prev ~= cid then redis.call('ZREM', KEYS[12], prev .. '\0' .. g) end
  redis.call('HSET', KEYS[11], g, cid .. '|' .. ms(now))
  redis.call('ZADD', KEYS[12], ms(now), cid .. '\0' .. g)
end
bchg(-gone - moved, moved)
local changed = 0
if gone + moved > 0 then changed = 1 end
return {next_at, outt, outd, changed, {}, tonumber(ARGV[6]) - budget, read}
