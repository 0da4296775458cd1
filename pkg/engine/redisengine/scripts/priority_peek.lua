-- priority_peek: a partition's visible messages by priority band, from the highest down, as far as a
-- receive of max needs: what a receive on a queue of several partitions that has seen
-- priorities reads first, so it claims the highest bands of the whole queue (priority.go).
-- Read only.
-- KEYS: 1 r, 2 f, 3 l
-- ARGV: 1 now ms, 2 max
-- Returns: {nextVisibleAt ms (0: none; only computed when nothing is visible),
--           band, visible count, band, visible count, ...}: the bands holding visible
-- messages, highest first, until their counts reach max (band 0 counts the list l too).
-- Cost: one ZCOUNT of each zset per band present above the last one returned.
local now, want = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {0}
local total = 0
for b = math.max(ztop(KEYS[1]), ztop(KEYS[2])), 0, -1 do
  if total >= want then break end
  local lo, hi = ms(b * BAND), ms(b * BAND + now)
  if b == 0 then lo = '-inf' end
  local c = redis.call('ZCOUNT', KEYS[1], lo, hi) + redis.call('ZCOUNT', KEYS[2], lo, hi)
  if b == 0 then c = c + redis.call('LLEN', KEYS[3]) end
  if c > 0 then
    out[#out + 1] = b
    out[#out + 1] = c
    total = total + c
  end
end
if total == 0 then
  local nr, nf = znext(KEYS[1], now), znext(KEYS[2], now)
  local next_at = nr
  if nf > 0 and (next_at == 0 or nf < next_at) then next_at = nf end
  out[1] = next_at
end
return out
