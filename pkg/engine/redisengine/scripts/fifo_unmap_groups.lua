-- fifo_unmap_groups: remove group -> partition mappings that are unchanged since the caller read them (a
-- send that allocated meanwhile changed its mapping's value, which keeps it).
-- KEYS: 1 the queue's group map
-- ARGV: pairs: group id, the value read
-- Returns: how many were removed.
local gone = {}
for i = 1, #ARGV, 2 do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then gone[#gone + 1] = ARGV[i] end
end
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
return #gone
