-- fgroups: one page of a fifo partition's groups in group id order. Read only.
-- KEYS: 1 r, 2 f, 3 gm, 4 gl
-- ARGV: 1 now ms, 2 the group id to start after ("" for the first), 3 limit
-- Returns: {group id, messages (visible, in flight and delayed), 1 when a batch is in flight
--           else 0, ...}. Costs O(limit * (log N + WIN)).
local now = tonumber(ARGV[1])
local G = {r = KEYS[1], f = KEYS[2], gm = KEYS[3], gl = KEYS[4]}
local limit = tonumber(ARGV[3])
local start = '-'
if ARGV[2] ~= '' then start = ghi(ARGV[2]) end
local out = {}
while #out < 3 * limit do
  local first = redis.call('ZRANGEBYLEX', G.gm, start, '+', 'LIMIT', 0, 1)
  if #first == 0 then break end
  local g = string.match(first[1], '^([^%z]+)%z')
  if not g then break end
  local count = redis.call('ZLEXCOUNT', G.gm, glo(g), ghi(g))
  local inflight = 0
  local sc = tonumber(redis.call('ZSCORE', G.gl, g))
  if sc and sc > now then -- locked or delayed: which?
    for _, w in ipairs(gread(G, g, 0, WIN)) do
      if w.fs and w.fs > now then inflight = 1 end
    end
  end
  out[#out + 1] = g; out[#out + 1] = count; out[#out + 1] = inflight
  start = ghi(g)
end
return out
