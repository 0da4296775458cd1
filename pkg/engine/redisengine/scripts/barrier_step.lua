-- barrier_step: one step of a standard queue's barrier state machine (barrier.go drives it). The
-- hold hl is the queue-wide acceptance order from the first pending barrier on; the
-- partitions hold only messages that may be delivered, plus at most one barrier moved out of
-- the hold (bout) once every message accepted before it had left.
-- KEYS: 1 the queue's partitions hash (fields n, bon, bout, blk, and bh: elements ever taken
--       off the head of hl, so browse positions stay put), 2 hl, 3 HB (the hold's byte hash),
--       [4 P (project byte hash; single server only)]
-- ARGV: 1 op, 2 now ms, 3 owner (a token of the caller), 4 lease ms, then by op:
--   look  5 max elements to release: takes the step's lease and answers what to do next:
--         {"busy"} another caller holds the lease; {"off"} barrier mode is off;
--         {"out", g, n, bout} a barrier is out ("<partition>|" .. id): the caller checks it is
--         still there; {"done", g, n} nothing is held any more: barrier mode is now off, the
--         caller lifts the fences of generation g; {"barrier", g, n, element} the hold starts
--         with a barrier; {"release", g, n, elements...} it starts with other messages, which
--         may go to the partitions (their barrier left). Expired elements at the head are
--         dropped first (they have left the queue).
--   popb  5 id, 6 bout value: the barrier at the head went to a partition: pop it, record it.
--   popm  5 count, 6 id of the first: the first count elements went to the partitions.
--   clear 5 bout value: the barrier out has left the queue.
--   unlock: release the lease.
-- Returns: as above; popb, popm, clear and unlock 1 when they changed something, else 0.
bkeys(3)
local P, H = KEYS[1], KEYS[2]
local op, now = ARGV[1], tonumber(ARGV[2])
-- helem reads an element: kind, id, expiresAt, where the payload starts.
local function helem(v)
  local i = string.find(v, '|', 19, true)
  local j = i and string.find(v, '|', i + 1, true)
  local k = j and string.find(v, '|', j + 1, true)
  if not k then return nil end
  return string.sub(v, 1, 1), string.sub(v, 2, 17), tonumber(string.sub(v, i + 1, j - 1)) or 0, k + 1
end
local function esize(v)
  local _, _, _, at = helem(v)
  if not at then return 0 end
  return psize(v, at)
end
if op == 'unlock' then
  local l = redis.call('HGET', P, 'blk')
  if l and string.sub(l, 1, #ARGV[3] + 1) == ARGV[3] .. '|' then
    redis.call('HDEL', P, 'blk')
    return 1
  end
  return 0
end
if op == 'clear' then
  if redis.call('HGET', P, 'bout') == ARGV[5] then redis.call('HDEL', P, 'bout'); return 1 end
  return 0
end
if op == 'popb' or op == 'popm' then
  local head = redis.call('LINDEX', H, 0)
  local id = op == 'popb' and ARGV[5] or ARGV[6]
  if not head or string.sub(head, 2, 17) ~= id then return 0 end
  local cnt = op == 'popb' and 1 or tonumber(ARGV[5])
  local gone = redis.call('LRANGE', H, 0, cnt - 1)
  local sz = 0
  for _, v in ipairs(gone) do sz = sz + esize(v) end
  redis.call('LTRIM', H, #gone, -1)
  redis.call('HINCRBY', P, 'bh', #gone)
  bchg(-sz, 0)
  if op == 'popb' then redis.call('HSET', P, 'bout', ARGV[6]) end
  return 1
end
-- look
local lk = redis.call('HGET', P, 'blk')
if lk then
  local till = tonumber(string.match(lk, '|(%d+)$') or '0')
  if till > now and string.sub(lk, 1, #ARGV[3] + 1) ~= ARGV[3] .. '|' then return {'busy'} end
end
local g = redis.call('HGET', P, 'bon')
local n = tonumber(redis.call('HGET', P, 'n') or '1')
if not g then redis.call('HDEL', P, 'blk'); return {'off'} end
redis.call('HSET', P, 'blk', ARGV[3] .. '|' .. ms(now + tonumber(ARGV[4])))
local drop, dropped = 0, 0
while true do
  local v = redis.call('LINDEX', H, 0)
  if not v then break end
  local _, _, ea = helem(v)
  if ea and ea > now then break end
  redis.call('LPOP', H)
  drop, dropped = drop + esize(v), dropped + 1
end
if dropped > 0 then redis.call('HINCRBY', P, 'bh', dropped) end
bchg(-drop, 0)
local out = redis.call('HGET', P, 'bout')
if out then return {'out', g, n, out} end
local head = redis.call('LINDEX', H, 0)
if not head then
  redis.call('HDEL', P, 'bon', 'blk')
  return {'done', g, n}
end
if string.sub(head, 1, 1) == 'b' then return {'barrier', g, n, head} end
local res = {'release', g, n}
for _, v in ipairs(redis.call('LRANGE', H, 0, tonumber(ARGV[5]) - 1)) do
  if string.sub(v, 1, 1) == 'b' then break end
  res[#res + 1] = v
end
return res
