-- delete: delete one visible or delayed message of a standard queue's partition by id
-- (docs/lifecycle.md#delete-a-waiting-message). m is indexed by id; the list l is not (an
-- element is id + times + payload, and Redis reads no part of one), so a message not in m is looked for in l a page at a time, and
-- every element of the page that is not the one wanted becomes a never-received message of m,
-- r and x, as a move task's take leaves the elements it passes (move_take.lua): those are found
-- by id from then on. A delete of an unknown id so reads each list element once, ever, instead
-- of the whole list on every call (issue 31).
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 l, 7 lh (list head position), 8 k, 9 ki, 10 B, [11 P]
-- ARGV: 1 now ms, 2 message id (16 raw bytes), 3 list elements to look at (the page)
-- Returns: {1} deleted; {2} in flight (received, deadline not passed: nothing changed);
--          {0} not here; {3} not found yet: the page moved out of l, call again.
local now = tonumber(ARGV[1])
local id = ARGV[2]
local K = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]}
bkeys(10)
local a, _, ea, _, mv, at = mstate(KEYS[3], KEYS[4], id)
if a then
  local dl = tonumber(redis.call('ZSCORE', KEYS[2], id))
  if dl and ptime(dl) > now then return {2} end
  local size = psize(mv, at or 1)
  del(K, id)
  unkey(KEYS[8], KEYS[9], id)
  bchg(-size, 0)
  if ea <= now then return {0} end -- expired: gone, as the sweep would have it
  return {1}
end
local count = tonumber(ARGV[3])
local items = redis.call('LRANGE', KEYS[6], 0, count - 1)
if #items == 0 then return {0} end
local found, gone = nil, 0
for _, v in ipairs(items) do
  local sa, lea, sas, eas, lat = lfields(v)
  local vid = string.sub(v, 1, 16)
  if not lat then
    -- malformed: dropped, as receive drops it
  elseif vid == id then
    gone = gone + psize(v, lat)
    if lea > now then found = 1 else found = 0 end
  elseif lea <= now then
    gone = gone + psize(v, lat) -- expired: dropped, as receive drops it
  else
    redis.call('HSET', KEYS[3], vid, mvalue('0|0|' .. eas .. '|' .. sas, string.sub(v, lat)))
    redis.call('ZADD', KEYS[1], sas, vid)
    redis.call('ZADD', KEYS[5], eas, vid)
  end
end
redis.call('LTRIM', KEYS[6], #items, -1)
redis.call('INCRBY', KEYS[7], #items)
bchg(-gone, 0)
if found then return {found} end
if #items < count then return {0} end
return {3}
