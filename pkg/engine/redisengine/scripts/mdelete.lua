-- mdelete: delete one visible or delayed message of a standard queue's partition by id
-- (SPEC §13), looking through part of the list l when the message is not in m.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 l, 7 lh (list head position), 8 k, 9 ki, 10 B, [11 P]
-- ARGV: 1 now ms, 2 message id (16 raw bytes), 3 list position to look from (positions count
--       every element ever pushed: lh + index), 4 list elements to look at
-- Returns: {1} deleted; {2} in flight (received, deadline not passed: nothing changed);
--          {0} not here; {3, position} not found yet: call again from position.
-- A list element is removed by overwriting it with a marker and removing the marker (LSET,
-- LREM: both walk the list in C, no copy): the elements after it move up one position, so a
-- browse page taken across the delete may skip one message (never shows one twice).
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
local head = tonumber(redis.call('GET', KEYS[7]) or '0')
local from = math.max(tonumber(ARGV[3]) - head, 0)
local count = tonumber(ARGV[4])
local items = redis.call('LRANGE', KEYS[6], from, from + count - 1)
for i, v in ipairs(items) do
  if string.sub(v, 1, 16) == id then
    local _, lea, _, _, lat = lfields(v)
    local mark = '\0deleted' .. id
    redis.call('LSET', KEYS[6], from + i - 1, mark)
    redis.call('LREM', KEYS[6], 1, mark)
    if lat then bchg(-psize(v, lat), 0) end
    if not lea or lea <= now then return {0} end
    return {1}
  end
end
if #items < count then return {0} end
return {3, head + from + #items}
