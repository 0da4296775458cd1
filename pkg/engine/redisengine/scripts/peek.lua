-- peek: how many messages of a partition are visible, and when the next one becomes visible.
-- Read only; used to spread a receive over partitions.
-- KEYS: 1 r, 2 f, 3 l
-- ARGV: 1 now ms
-- Returns: {visible, nextVisibleAt ms (0: none; only computed when visible is 0)}
local now = tonumber(ARGV[1])
-- r and f hold a band of scores per priority (prelude.lua: BAND).
local visible = redis.call('LLEN', KEYS[3]) + zdue(KEYS[1], now) + zdue(KEYS[2], now)
local next_at = 0
if visible == 0 then
  local nr, nf = znext(KEYS[1], now), znext(KEYS[2], now)
  next_at = nr
  if nf > 0 and (next_at == 0 or nf < next_at) then next_at = nf end
end
return {visible, next_at}
