-- Helpers prepended to every script (see scripts.go). Message state is the string
-- "attempt|receivedAtMs|expiresAtMs|sentAtMs"; attempt counts every receive (handles name it,
-- so it only ever grows, across dead-letters and moves too: see pbase). A cancelled message's
-- attempt field is "attempt:cancels", with a trailing '*' while the delivery of that attempt
-- stands cancelled (cancel.lua); its receiveCount is attempt - cancels - its payload's base.
local function parse_state(st)
  if not st then return nil end
  local a, ra, ea, sa = string.match(st, '^(%d+)|(%d+)|(%d+)|(%d+)$')
  if not a then return nil end
  return tonumber(a), tonumber(ra), tonumber(ea), tonumber(sa)
end
local function fmt_state(a, ra, ea, sa, c, cut)
  if c and c > 0 then
    local mark = ''
    if cut then mark = '*' end
    return string.format('%d:%d%s|%d|%d|%d', a, c, mark, ra, ea, sa)
  end
  return string.format('%d|%d|%d|%d', a, ra, ea, sa)
end
-- attempt_field reads the attempt field: attempt, cancels, whether this attempt is cancelled.
local function attempt_field(f)
  local a = tonumber(f)
  if a then return a, 0, false end
  local x, y, mark = string.match(f, '^(%d+):(%d+)(%*?)$')
  if not x then return nil end
  return tonumber(x), tonumber(y), mark == '*'
end
-- A message is one field of m: its state, '|', then its payload. mparse reads value v of
-- message id (false or nil: no such message) as mstate reads it from m. Messages stored before
-- (payload alone in m, starting with the format version byte 1, never a digit; the state in s)
-- are still read: mread's sixth result is then true, and rewriting one removes its s field.
-- The seventh and eighth results are the cancels and whether this attempt is cancelled.
local function mparse(v, s, id)
  if not v then return nil end
  -- Plain finds: several times cheaper than a pattern match.
  local i1 = string.find(v, '|', 1, true)
  local i2 = i1 and string.find(v, '|', i1 + 1, true)
  local i3 = i2 and string.find(v, '|', i2 + 1, true)
  local i4 = i3 and string.find(v, '|', i3 + 1, true)
  if i4 then
    local a, c, cut = attempt_field(string.sub(v, 1, i1 - 1))
    local ra = tonumber(string.sub(v, i1 + 1, i2 - 1))
    local ea, sa = tonumber(string.sub(v, i2 + 1, i3 - 1)), tonumber(string.sub(v, i3 + 1, i4 - 1))
    if a and ra and ea and sa then return a, ra, ea, sa, v, i4 + 1, c, cut end
  end
  local oa, ora, oea, osa = parse_state(redis.call('HGET', s, id))
  if not oa then return nil end
  return oa, ora, oea, osa, v, nil, 0, false
end
-- mstate is mparse of message id's field of m (mparse takes the value an HMGET read).
local function mstate(m, s, id) return mparse(redis.call('HGET', m, id), s, id) end
-- mread is mstate with the payload: a, ra, ea, sa, payload, old, cancels, cancelled.
local function mread(m, s, id)
  local a, ra, ea, sa, v, at, c, cut = mstate(m, s, id)
  if not a then return nil end
  if at then return a, ra, ea, sa, string.sub(v, at), false, c, cut end
  return a, ra, ea, sa, v, true, c, cut
end
local function mvalue(state, payload) return state .. '|' .. payload end
-- A never-received message sent without delay is one element of the partition's list l:
-- id (16 bytes) .. sentAtMs .. '|' .. expiresAtMs .. '|' .. payload. lfields reads one
-- without copying the payload: sa and ea as numbers and as strings, and where the payload
-- starts (nil when malformed; plain finds: several times cheaper than a pattern match).
local function lfields(v)
  local i = string.find(v, '|', 18, true)
  if not i then return nil end
  local j = string.find(v, '|', i + 2, true)
  if not j then return nil end
  local sas, eas = string.sub(v, 17, i - 1), string.sub(v, i + 1, j - 1)
  local sa, ea = tonumber(sas), tonumber(eas)
  if not sa or not ea then return nil end
  return sa, ea, sas, eas, j + 1
end
local function ms(n)
  return string.format('%d', n)
end
-- del removes every trace of a message from a partition. K = {r, f, m, s, x} (s: see mstate).
local function del(K, id)
  redis.call('ZREM', K[1], id)
  redis.call('ZREM', K[2], id)
  redis.call('HDEL', K[3], id)
  redis.call('HDEL', K[4], id)
  redis.call('ZREM', K[5], id)
end
-- Delivery attempts never repeat for a message id (handles name them; docs/lifecycle.md): a message
-- that leaves its queue by a dead-letter or a move carries an attempt base in its payload
-- (payload.go: flag bit 1, 4 bytes big-endian at its end), and it arrives with its attempt
-- field at that base (insert.lua, fifo_send.lua), so its attempts go on from there and its
-- receiveCount (attempt - cancels - base) starts again at 0. A payload without a base
-- (a message never moved, or one moved or dead-lettered by a version before bases) may
-- have had attempts restarted at 0 behind it: its next base jumps by JUMP
-- (engine.DeliveryJump), beyond any attempt an earlier handle of the id can name.
local JUMP = 16777216
-- pbase is the attempt base of payload p (0: none).
local function pbase(p)
  local fl = string.byte(p, 2)
  if not fl or fl % 4 < 2 or #p < 6 then return 0 end
  local b1, b2, b3, b4 = string.byte(p, -4, -1)
  return ((b1 * 256 + b2) * 256 + b3) * 256 + b4
end
-- rebase is payload p leaving its queue at attempt a: with the base its next arrival starts
-- from (a, or a + JUMP when p has none).
local function rebase(p, a)
  local fl = string.byte(p, 2) or 0
  local head, nb
  if fl % 4 >= 2 then
    head, nb = string.sub(p, 1, -5), a
  else
    head, nb = string.sub(p, 1, 1) .. string.char(fl + 2) .. string.sub(p, 3), a + JUMP
  end
  if nb > 4278190079 then nb = 4278190079 end -- uint32, with room for the attempts to come
  return head .. string.char(math.floor(nb / 16777216) % 256, math.floor(nb / 65536) % 256,
    math.floor(nb / 256) % 256, nb % 256)
end
-- outbox_value is what a dead-letter move (or a move task's take, with the destination as its
-- reason) leaves in the outbox for Go to finish, for a message at attempt a:
-- "1|<atMs>|<sentAtMs>|<len(reason)>|" .. reason .. payload (rebased, see rebase).
local function outbox_value(at, sa, reason, payload, a)
  return string.format('1|%d|%d|%d|', at, sa, #reason) .. reason .. rebase(payload, a)
end

-- Fifo helpers (see keys.go). A group's messages are the gm members in ["<g>\0", "<g>\1"),
-- in send order. A group's batch is always taken from its head and its unacknowledged
-- messages stay at its head, so its received messages are among its first WIN (the largest
-- batch): the window read below is all a script needs to place a group. Every non-empty group
-- is in exactly one of gs (available: score = its head's sequence number, so receives serve
-- the oldest heads first) and gl (locked by a batch in flight, or its head delayed: score =
-- when it becomes available; from then on receives treat it as available).
local WIN = 10
local function glo(g) return '[' .. g .. '\0' end
local function ghi(g) return '(' .. g .. '\1' end
-- gid_of is the group of a gi value ("<g>\0" .. 16 hex digits).
local function gid_of(prefix) return string.sub(prefix, 1, #prefix - 17) end
-- seq_of is the sequence number in a gm member.
local function seq_of(m) return tonumber(string.sub(m, -32, -17), 16) end
-- gread reads up to n members of group g from offset, each with its message's received (f)
-- and never-received (r) scores.
local function gread(G, g, offset, n)
  local mem = redis.call('ZRANGEBYLEX', G.gm, glo(g), ghi(g), 'LIMIT', offset, n)
  local out = {}
  for i, m in ipairs(mem) do
    local id = string.sub(m, -16)
    out[i] = {m = m, id = id, fs = tonumber(redis.call('ZSCORE', G.f, id)), rs = tonumber(redis.call('ZSCORE', G.r, id))}
  end
  return out
end
-- gplace places a group whose first messages are win (in order, without the ids in skip, with
-- received scores replaced by over[id]): {at, head seq}, where at is when it may next be
-- served: the latest deadline of its received messages (later than now: a batch is in
-- flight), or its head's visible-from time when the head was never received. false: empty.
local function gplace(win, skip, over)
  local best, n, head = nil, 0, nil
  for _, w in ipairs(win) do
    if not skip[w.id] then
      n = n + 1
      if n > WIN then break end
      local fs = over[w.id] or w.fs
      if n == 1 then head = w end
      if fs then
        if not best or fs > best then best = fs end
      elseif n == 1 then
        best = w.rs or 0
      end
    end
  end
  if n == 0 then return false end
  return {best or 0, seq_of(head.m)}
end
-- Parked groups (poison policies park and parkGroup; keys.go, gp): a parked group sits in gl
-- at PARK, a score no time reaches, so no receive serves it, and gset leaves it there, empty
-- or not, until gunpark.
local PARK = 1125899906842624 -- 2^50 ms
local function gparked(G, g)
  local sc = tonumber(redis.call('ZSCORE', G.gl, g))
  return sc ~= nil and sc >= PARK
end
-- gset writes a group's placement (false: the group is empty and leaves both sets); a parked
-- group stays where it is.
local function gset(G, g, pl, now)
  if gparked(G, g) then return end
  if not pl then
    redis.call('ZREM', G.gs, g); redis.call('ZREM', G.gl, g)
  elseif pl[1] > now then
    redis.call('ZREM', G.gs, g); redis.call('ZADD', G.gl, ms(pl[1]), g)
  else
    redis.call('ZREM', G.gl, g); redis.call('ZADD', G.gs, ms(pl[2]), g)
  end
end
-- gpark parks group g for its messages out (dead-lettered, in group order: {id, gm member
-- prefix} each) with reason: each is recorded under the parking's epoch, so that a move
-- bringing it back puts it at its old place (fifo_send.lua); a parked group counts them on.
local function gpark(G, g, out, reason)
  local v = redis.call('HGET', G.gp, 'g' .. g)
  local ep, n = nil, 0
  if v then
    local a, b = string.match(v, '^(%d+)|(%d+)|')
    ep, n = a, tonumber(b)
  end
  if not ep then ep = tostring(redis.call('HINCRBY', G.gp, '#', 1)); n = 0 end
  for _, e in ipairs(out) do redis.call('HSET', G.gp, 'i' .. e[1], ep .. '|' .. e[2]) end
  redis.call('HSET', G.gp, 'g' .. g, ep .. '|' .. (n + #out) .. '|' .. reason)
  redis.call('ZREM', G.gs, g)
  redis.call('ZADD', G.gl, ms(PARK), g)
end
-- gunpark ends group g's parking and places it from its messages; true when it became
-- available now.
local function gunpark(G, g, now)
  redis.call('HDEL', G.gp, 'g' .. g)
  redis.call('ZREM', G.gl, g)
  local pl = gplace(gread(G, g, 0, WIN), {}, {})
  gset(G, g, pl, now)
  return pl and pl[1] <= now
end
-- gparkinfo reads group g's parking: epoch, messages out, reason (nil when not parked).
local function gparkinfo(G, g)
  local v = redis.call('HGET', G.gp, 'g' .. g)
  if not v then return nil end
  local ep, n, reason = string.match(v, '^(%d+)|(%d+)|(.*)$')
  return ep, tonumber(n), reason
end
-- gavail tells whether group g is available now (read only).
local function gavail(G, g, now)
  if redis.call('ZSCORE', G.gs, g) then return true end
  local at = tonumber(redis.call('ZSCORE', G.gl, g))
  return at ~= nil and at <= now
end
-- fdel removes a fifo message: del plus its group membership. K = {r, f, m, s, x};
-- G.gm, G.gi; prefix is its gi value (false when unknown).
local function fdel(K, G, id, prefix)
  del(K, id)
  if prefix then redis.call('ZREM', G.gm, prefix .. id) end
  redis.call('HDEL', G.gi, id)
end
-- gplan reads where each group of groups (g -> how many of its messages are being removed, the
-- ids in skip) goes after the change: g -> {available before, new placement}.
local function gplan(G, groups, skip, over, now)
  local plan = {}
  for g, k in pairs(groups) do
    plan[g] = {gavail(G, g, now), gplace(gread(G, g, 0, WIN + k), skip, over)}
  end
  return plan
end
-- gapply writes a plan; true when a group became available to receives (wake the pollers).
local function gapply(G, plan, now)
  local woke = false
  for g, p in pairs(plan) do
    gset(G, g, p[2], now)
    if p[2] and p[2][1] <= now and not p[1] then woke = true end
  end
  return woke
end
-- fkeys names the keys of the fifo scripts: KEYS r, f, m, s, x, gm, gi, gs, gl first.
local function fkeys()
  return {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]},
    {r = KEYS[1], f = KEYS[2], gm = KEYS[6], gi = KEYS[7], gs = KEYS[8], gl = KEYS[9]}
end

-- Exclusive group bindings (engine/grouppolicy.go; rediskeys): gb maps a group to
-- "<consumerId>|<last active ms>", gx holds "<consumerId>\0<group>" -> last active ms, so a
-- consumer's bindings are one lexicographic range and idle ones are a score range. A binding
-- is live while last active > now - affinity; a settled message of the group refreshes it,
-- an endGroup one (payload flag bit 2) ends it.
local function bparse(v)
  if not v then return nil, 0 end
  local i = string.find(v, '|', 1, true)
  if not i then return nil, 0 end
  return string.sub(v, 1, i - 1), tonumber(string.sub(v, i + 1)) or 0
end
-- pend tells whether the payload starting at position at of v (nil: v is the payload) ends
-- its group.
local function pend(v, at)
  local fl = string.byte(v, (at or 1) + 1) or 0
  return math.floor(fl / 4) % 2 == 1
end
-- bsettle follows the settlement of messages of groups (g -> true when one of them ended
-- its group): a bound group's binding is refreshed, or ended.
local function bsettle(GB, GX, groups, now)
  for g, ended in pairs(groups) do
    local owner = bparse(redis.call('HGET', GB, g))
    if owner then
      if ended then
        redis.call('HDEL', GB, g); redis.call('ZREM', GX, owner .. '\0' .. g)
      else
        redis.call('HSET', GB, g, owner .. '|' .. ms(now)); redis.call('ZADD', GX, ms(now), owner .. '\0' .. g)
      end
    end
  end
end

-- Stored bytes (keys.go): every message counts its body and attribute names and values, as the
-- size limit measures them. A script that stores or removes payload moves its partition's
-- byte hash B (n: bytes of its messages, o: of its dead-letter outbox, v: version) in the same
-- step, and on a single server, where one script may touch any key, folds the new total into
-- the project's byte hash P too; on Redis Cluster (no P) the engine folds it afterwards
-- (bytes_fold.lua). bkeys names B and P: KEYS[i] and, when present, KEYS[i + 1].
local BK, PK, PJ = nil, nil, nil
local function bkeys(i) BK = KEYS[i]; PK = KEYS[i + 1] end
-- uvar reads a uvarint at position i of v: value and the next position (nil when truncated).
local function uvar(v, i)
  local n, mul = 0, 1
  while true do
    local c = string.byte(v, i)
    if not c then return nil end
    i = i + 1
    n = n + (c % 128) * mul
    if c < 128 then return n, i end
    mul = mul * 128
  end
end
-- RESERVED names the service's own attributes (engine.TraceparentAttribute,
-- engine.ReplayOfAttribute), which no limit counts: stored bytes and the quota check agree
-- with engine.PayloadBytes, which the embedded engine and the API count.
local RESERVED = {['#traceparent'] = true, ['#replayOf'] = true}
-- psize is the stored bytes of the payload (payload.go) starting at position at of v: the
-- body and every attribute name and value but the reserved ones ("#" starts only those).
local function psize(v, at)
  local i = (at or 1) + 2
  local bl
  bl, i = uvar(v, i)
  if not bl then return 0 end
  local s = bl
  local na
  na, i = uvar(v, i + bl)
  if not na then return s end
  for _ = 1, na do
    local nl, vl
    nl, i = uvar(v, i)
    if not nl then return s end
    local own = string.byte(v, i) == 35 and RESERVED[string.sub(v, i, i + nl - 1)]
    vl, i = uvar(v, i + nl)
    if not vl then return s end
    if not own then s = s + nl + vl end
    i = i + vl
  end
  return s
end
-- Attribute filters (docs/delivery-options.md#filtered-receive-and-browse; filter.go encodes them):
-- per attribute, in name order, "<len>:<name><count>:" and then "<len>:<value>" for each of its
-- values, so any UTF-8 value fits. fparse reads one into name -> {value -> true} and the number of
-- names.
local function fparse(s)
  local f, n, i = {}, 0, 1
  local function num()
    local c = string.find(s, ':', i, true)
    local x = tonumber(string.sub(s, i, c - 1))
    i = c + 1
    return x
  end
  local function tok()
    local l = num()
    local t = string.sub(s, i, i + l - 1)
    i = i + l
    return t
  end
  while i <= #s do
    local name = tok()
    local set = {}
    for _ = 1, num() do set[tok()] = true end
    f[name] = set
    n = n + 1
  end
  return f, n
end
-- fmatch tells whether the payload (payload.go) starting at position at of v has each of
-- filter f's n attributes with one of its values. It walks the attribute pairs as psize does,
-- copying only the names and the values of named attributes.
local function fmatch(f, n, v, at)
  local i = (at or 1) + 2
  local bl, na
  bl, i = uvar(v, i)
  if not bl then return false end
  na, i = uvar(v, i + bl)
  if not na then return false end
  local hit = 0
  for _ = 1, na do
    local l
    l, i = uvar(v, i)
    if not l then return false end
    local set = f[string.sub(v, i, i + l - 1)]
    l, i = uvar(v, i + l)
    if not l then return false end
    if set then
      if not set[string.sub(v, i, i + l - 1)] then return false end
      hit = hit + 1
    end
    i = i + l
  end
  return hit == n
end
-- osize is the stored bytes of an outbox value ("1|at|sa|len(reason)|" .. reason .. payload).
local function osize(v)
  local a, b, rl, rest = string.match(v, '^1|(%d+)|(%d+)|(%d+)|()')
  if not a then return 0 end
  return psize(v, rest + tonumber(rl))
end
-- bfold applies a partition's total s at version ver to the project's hash P, once: a fold
-- older than the one applied (Cluster: two replicas folding concurrently) changes nothing.
-- An emptied partition's field goes when the fold is the change's own (single server, in
-- the same script: no older fold can follow); a later fold keeps it as "ver|0" (Cluster).
local function bfold(P, field, ver, s, keep)
  local old = redis.call('HGET', P, field)
  local ov, os = 0, 0
  if old then
    local x, y = string.match(old, '^(%d+)|(%d+)$')
    ov, os = tonumber(x) or 0, tonumber(y) or 0
  end
  if ver <= ov then return end
  if s > 0 or keep then redis.call('HSET', P, field, ver .. '|' .. s) else redis.call('HDEL', P, field) end
  if s ~= os then redis.call('HINCRBY', P, 't', s - os) end
end
-- bchg moves the partition's message bytes by dn and outbox bytes by dob. Counts never go
-- below 0 (messages stored before counting began were never added).
-- (One read of o and pj: each redis.call costs about as much as a message's own work.)
local function bchg(dn, dob)
  if dn == 0 and dob == 0 then return end
  local n = redis.call('HINCRBY', BK, 'n', dn)
  if n < 0 then redis.call('HSET', BK, 'n', 0); n = 0 end
  local cur = redis.call('HMGET', BK, 'o', 'pj')
  local o = tonumber(cur[1] or '0')
  if dob ~= 0 then
    o = redis.call('HINCRBY', BK, 'o', dob)
    if o < 0 then redis.call('HSET', BK, 'o', 0); o = 0 end
  end
  if PJ and dn > 0 and cur[2] ~= PJ then redis.call('HSET', BK, 'pj', PJ) end
  local ver = redis.call('HINCRBY', BK, 'v', 1)
  if PK then bfold(PK, BK, ver, n + o) end
end
-- dead_letter settles dead-lettered messages {id, outbox value} of moved payload bytes: each
-- goes to the outbox o when the queue has a redrive policy and is deleted either way (K as
-- del's); returns {id, outbox value, ...} of what went to o.
local function dead_letter(K, o, dead, redrive, moved)
  local out = {}
  for _, e in ipairs(dead) do
    if redrive then
      redis.call('HSET', o, e[1], e[2])
      out[#out + 1] = e[1]; out[#out + 1] = e[2]
    end
    del(K, e[1])
  end
  if redrive then bchg(-moved, moved) else bchg(-moved, 0) end
  return out
end
-- ptotal is the project's stored bytes (single server: read in the storing script).
local function ptotal() return tonumber(redis.call('HGET', PK, 't') or '0') end

-- Conflation (keys.go: k, ki; keyed_send.lua). unkey frees message id's key, if it has one: called
-- wherever a never-received message leaves the waiting state (receive, delete, expiry).
local function unkey(k, ki, id)
  local key = redis.call('HGET', ki, id)
  if not key then return end
  redis.call('HDEL', ki, id)
  local v = redis.call('HGET', k, key)
  if v and string.sub(v, 1, 16) == id then redis.call('HDEL', k, key) end
end
-- kwaiting finds the message of key that waits never delivered (in m, attempt 0, not
-- expired, not in f): its id, version, m value and where the payload starts; nil when none.
-- An index entry naming a message that no longer waits is ignored (its cleanup may still be
-- under way in another script of the same partition: none is, scripts are atomic, but an
-- entry written before a crash of a multi-step path is tolerated).
local function kwaiting(k, m, s, f, key, now)
  local v = redis.call('HGET', k, key)
  if not v then return nil end
  local id = string.sub(v, 1, 16)
  local a, _, ea, _, mv, at = mstate(m, s, id)
  if not a or a ~= 0 or ea <= now or not at or redis.call('ZSCORE', f, id) then return nil end
  return id, tonumber(string.sub(v, 17)) or 0, mv, at
end

-- Priority (docs/delivery-options.md#priority; keys.go): a message of priority b > 0 never goes to
-- l, and its r and f scores are its time plus b * BAND, so each zset holds up to ten bands of
-- scores, band 0 (priority 0, every message stored before priorities existed) unchanged. A band's
-- due members are one score range, so a script reads them from the highest band down.
local BAND = 8796093022208 -- 2^43 ms (about 278 years): every time fits below it
local function pband(s) return math.floor(s / BAND) end
local function ptime(s) return s - pband(s) * BAND end
-- ztop is the highest band zset z holds (0: empty or priority 0 only); O(log n).
local function ztop(z)
  local t = redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')
  if #t == 0 then return 0 end
  return pband(tonumber(t[2]))
end
-- zdue counts the members of z whose time is <= now, in every band.
local function zdue(z, now)
  local n = redis.call('ZCOUNT', z, '-inf', ms(now))
  for b = 1, ztop(z) do n = n + redis.call('ZCOUNT', z, ms(b * BAND), ms(b * BAND + now)) end
  return n
end
-- znext is the earliest time after now of a member of z in any band (0: none).
local function znext(z, now)
  local best = 0
  for b = 0, ztop(z) do
    local t = redis.call('ZRANGEBYSCORE', z, '(' .. ms(b * BAND + now), '(' .. ms((b + 1) * BAND), 'WITHSCORES', 'LIMIT', 0, 1)
    if #t > 0 then
      local at = ptime(tonumber(t[2]))
      if best == 0 or at < best then best = at end
    end
  end
  return best
end

-- bump adds n to a partition's send counter of the current second (keys.go) and returns its
-- new value. The key's name holds the second, so only the call that makes it sets its expiry.
local function bump(k, n)
  local r = redis.call('INCRBY', k, n)
  if r == n then redis.call('PEXPIRE', k, 2000) end
  return r
end
