-- fifo_reserve: the queue-level step of a fifo send, for a batch, in one call under the queue's
-- hash tag: deduplication, sequence numbers, and which partition each group lives in.
-- KEYS: 1 partitions hash, 2 sequence counter, 3 group map; 4.. dedup markers (one per
--       distinct dedup id of the batch)
-- ARGV: 1 now ms, 2 dedup window ms, 3 marker lifetime ms (window + margin);
--       then 5 per message: id (16 raw bytes), group id, index in KEYS of its dedup marker
--       (0: none), a random number (a group without a partition gets it mod the partition
--       count), mode: "n" new, "r" re-allocate (it holds its reservation already; a fresh
--       sequence number), or "t" .. id: take over the reservation of that fenced message
-- Returns per message {status, partition, seq, id, at}:
--   1: reserved: store the caller's message id in partition with sequence number seq (its
--      dedup window, if any, starts at at);
--   2: the dedup id is held by message id since at, stored in partition with sequence number
--      seq (its latest reservation's; 0 in a marker written before markers named it); the
--      caller checks that it was stored (fifo_verify_dedup) before answering "duplicate".
-- A marker is written at reservation, before the message is stored (the "pending" state);
-- only the partition's own record of the store ("S" in dd, written by fifo_send atomically with
-- the message) makes it a duplicate's answer. See fifo.go.
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '1')
local seq0 = tonumber(redis.call('GET', KEYS[2]) or '0')
local seq = seq0
local maps, marks = {}, {}
local wmap, wmark = {}, {}
local out = {}
for i = 4, #ARGV, 5 do
  local id, g, dk, rnd, mode = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), ARGV[i + 4]
  local mk = false
  if dk > 0 then
    local key = KEYS[dk]
    if marks[key] == nil then
      marks[key] = false
      local v = redis.call('GET', key)
      if v and #v > 16 then
        local p, at, hs = string.match(string.sub(v, 17), '^(%d+)|(%d+)|?(%d*)$')
        if p and now - tonumber(at) < window then
          marks[key] = {string.sub(v, 1, 16), tonumber(p), tonumber(at), tonumber(hs) or 0}
        end
      end
    end
    mk = marks[key]
  end
  local held = false
  if mk then
    if mode == 'n' then held = true
    elseif mode == 'r' then held = mk[1] ~= id
    else held = mk[1] ~= string.sub(mode, 2) end
  end
  if held then
    out[#out + 1] = {2, mk[2], mk[4], mk[1], mk[3]}
  else
    if maps[g] == nil then
      maps[g] = false
      local v = redis.call('HGET', KEYS[3], g)
      if v then
        local p = string.match(v, '^(%d+)|')
        if p then maps[g] = tonumber(p) end
      end
    end
    local p = maps[g]
    if not p then
      p = rnd % n
      maps[g] = p
    end
    seq = seq + 1
    wmap[g] = string.format('%d|%d|%d', p, seq, now)
    local at = now
    if mk and mode == 'r' then at = mk[3] end -- a re-allocation keeps its window
    if dk > 0 then
      marks[KEYS[dk]] = {id, p, at, seq}
      wmark[KEYS[dk]] = id .. string.format('%d|%d|%d', p, at, seq)
    end
    out[#out + 1] = {1, p, seq, id, at}
  end
end
if seq ~= seq0 then redis.call('SET', KEYS[2], ms(seq)) end
for g, v in pairs(wmap) do redis.call('HSET', KEYS[3], g, v) end
for k, v in pairs(wmark) do redis.call('SET', k, v, 'PX', ARGV[3]) end
return out
