-- deadletter: a consumer dead-letters valid deliveries: each message moves to the outbox when
-- the queue has a redrive policy, and is deleted when it has none.
-- KEYS: 1 r, 2 f, 3 m, 4 s, 5 x, 6 o, 7 B, [8 P] (stored bytes: prelude.lua; a move keeps
--       the bytes in the partition, in its outbox, until the dead-letter queue has the message)
-- ARGV: 1 now ms, 2 "1" with a redrive policy else "0"; then 2 per delivery: id, attempt,
--       reason
-- Returns: {{one code per delivery: 1 done, 0 stale}, {id, outbox value, ...}}
local now = tonumber(ARGV[1])
local redrive = ARGV[2] == '1'
local K = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]}
bkeys(7)
local res, ok, seen = {}, {}, {}
local moved = 0
for i = 3, #ARGV, 3 do
  local id = ARGV[i]
  local a, ra, ea, sa, p = mread(KEYS[3], KEYS[4], id)
  local payload = false
  if a and a == tonumber(ARGV[i + 1]) and ea > now and not seen[id] then payload = p end
  if payload then
    res[#res + 1] = 1; ok[#ok + 1] = {id, outbox_value(now, sa, ARGV[i + 2], payload, a)}
    seen[id] = true
    moved = moved + psize(payload)
  else
    res[#res + 1] = 0
  end
end
return {res, dead_letter(K, KEYS[6], ok, redrive, moved)}
