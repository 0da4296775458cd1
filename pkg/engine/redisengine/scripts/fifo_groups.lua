-- fifo_groups: one page of a fifo partition's groups in group id order. Read only.
-- KEYS: 1 r, 2 f, 3 gm, 4 gl, 5 m, 6 s, 7 gp
-- ARGV: 1 now ms, 2 the group id to start after ("" for the first), 3 limit, 4 state: "" any,
--       "active", "parked" (prelude.lua: gpark; a parked group is listed even when empty)
-- Returns: {group id, messages (visible, in flight and delayed), 1 when a batch is in flight
--           else 0, 1 when parked else 0, the head's receiveCount, the parking's reason ("" when
--           active), ...}. Costs O(limit * (log N + WIN)), plus O(P log P) for P parked groups.
local now = tonumber(ARGV[1])
local G = {r = KEYS[1], f = KEYS[2], gm = KEYS[3], gl = KEYS[4], gp = KEYS[7]}
local limit = tonumber(ARGV[3])
local want = ARGV[4]
local after = ARGV[2]
local names = {}
-- Parked groups, from gl (a parked group may have no message left).
local parked = {}
for _, g in ipairs(redis.call('ZRANGEBYSCORE', G.gl, ms(PARK), '+inf')) do
  parked[g] = true
  if g > after and (want == 'parked' or (want == '' and
      #redis.call('ZRANGEBYLEX', G.gm, glo(g), ghi(g), 'LIMIT', 0, 1) == 0)) then
    names[#names + 1] = g
  end
end
if want ~= 'parked' then
  local start = '-'
  if after ~= '' then start = ghi(after) end
  local found = 0
  while found < limit do
    local first = redis.call('ZRANGEBYLEX', G.gm, start, '+', 'LIMIT', 0, 1)
    if #first == 0 then break end
    local g = string.match(first[1], '^([^%z]+)%z')
    if not g then break end
    if not (want == 'active' and parked[g]) then
      names[#names + 1] = g
      found = found + 1
    end
    start = ghi(g)
  end
end
table.sort(names)
local out = {}
for i = 1, math.min(limit, #names) do
  local g = names[i]
  local count = redis.call('ZLEXCOUNT', G.gm, glo(g), ghi(g))
  local inflight, rc = 0, 0
  local sc = tonumber(redis.call('ZSCORE', G.gl, g))
  local win = gread(G, g, 0, WIN)
  if sc and sc > now then -- locked, delayed or parked: anything in flight?
    for _, w in ipairs(win) do
      if w.fs and w.fs > now then inflight = 1 end
    end
  end
  if #win > 0 then
    local a, _, _, _, p, _, c = mread(KEYS[5], KEYS[6], win[1].id)
    if a then rc = math.max(a - c - pbase(p), 0) end
  end
  local st, reason = 0, ''
  if parked[g] then
    local _, _, r = gparkinfo(G, g)
    st, reason = 1, r or ''
  end
  out[#out + 1] = g; out[#out + 1] = count; out[#out + 1] = inflight
  out[#out + 1] = st; out[#out + 1] = rc; out[#out + 1] = reason
end
return out
