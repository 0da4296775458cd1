-- park: take one of a project's waiting-receive slots, if one is free.
-- KEYS: 1 the project's waiting zset (member: replica:poll or a replica's lease, score: the
--       slot's expiry in ms), 2 the leases hash (member: how many slots it stands for; a
--       member without an entry is one slot: lease.lua)
-- ARGV: 1 now ms, 2 expiry ms of the new slot, 3 member, 4 the limit
-- Returns: 1 taken, 0 all slots are in use.
-- Slots past their expiry are dropped first: a replica killed while holding slots cannot keep
-- them past the longest wait it could have had.
local now, exp, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
if waiting(KEYS[1], KEYS[2], now) >= limit then
  return 0
end
redis.call('ZADD', KEYS[1], exp, ARGV[3])
keep(KEYS[1], KEYS[2], now, exp)
return 1
