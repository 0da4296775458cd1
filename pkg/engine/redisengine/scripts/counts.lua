-- counts: a partition's counts by state and the send time of its oldest message, leaving out
-- messages past their retention whether or not a sweep removed them yet. Read only.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 l
-- ARGV: 1 now ms, 2 how many of the earliest-expiring messages to sample for the oldest,
--       3 how many expired messages of m to look up at most (beyond that the caller expires
--       them first)
-- Returns: {visible, inFlight, delayed, oldest sentAt ms (0: none), 1 when more than ARGV[3]
--           expired messages of m were not left out (else 0)}
local now = ARGV[1]
local nown = tonumber(now)
-- l's expired messages are its prefix (expiry does not decrease along it, give or take
-- send.lua's SKEW): a binary search finds where its live ones start, in O(log n) reads.
local llen = redis.call('LLEN', KEYS[6])
local function lexpired(i)
  local _, ea = lfields(redis.call('LINDEX', KEYS[6], i))
  return not ea or ea <= nown -- a malformed element counts as expired, as expire.lua drops it
end
local lexp = 0
if llen > 0 and lexpired(0) then
  local lo, hi = 0, llen -- lo is expired; hi is live (or the end)
  while hi - lo > 1 do
    local mid = math.floor((lo + hi) / 2)
    if lexpired(mid) then lo = mid else hi = mid end
  end
  lexp = hi
end
-- r and f hold a band of scores per priority (prelude.lua: BAND).
local rdue, fdue = zdue(KEYS[1], nown), zdue(KEYS[2], nown)
local visible = llen - lexp + rdue + fdue
local inflight = redis.call('ZCARD', KEYS[2]) - fdue
local delayed = redis.call('ZCARD', KEYS[1]) - rdue
-- The expired messages of m (x is by expiry): the sweep removes them every few seconds, so
-- there are few; each is taken out of the count of its state.
local more = 0
if redis.call('ZCOUNT', KEYS[5], '-inf', now) > tonumber(ARGV[3]) then
  more = 1
else
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now)) do
    local s = redis.call('ZSCORE', KEYS[1], id)
    if s then
      if ptime(tonumber(s)) <= nown then visible = visible - 1 else delayed = delayed - 1 end
    else
      s = redis.call('ZSCORE', KEYS[2], id)
      if s then
        if ptime(tonumber(s)) <= nown then visible = visible - 1 else inflight = inflight - 1 end
      end
    end
  end
end
local oldest = 0
-- The first live element of l is its oldest.
if lexp < llen then
  local sa = lfields(redis.call('LINDEX', KEYS[6], lexp))
  if sa then oldest = sa end
end
local ids = redis.call('ZRANGEBYSCORE', KEYS[5], '(' .. now, '+inf', 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  local a, ra, ea, sa = mstate(KEYS[3], KEYS[4], id)
  if a and (oldest == 0 or sa < oldest) then oldest = sa end
end
return {visible, inflight, delayed, oldest, more}
