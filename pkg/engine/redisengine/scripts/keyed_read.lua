-- keyed_read: the waiting messages of conflation keys in one partition, for a keyed send that must
-- compute a merge (merge "patch") or find where a key lives (keyed_send.lua checks what it read).
-- KEYS: 1 m, 2 s, 3 f, 4 k (key -> id .. version)
-- ARGV: 1 now ms, then the keys
-- Returns: per key {} when no message of the key waits here, else {id, version, payload}.
local now = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV do
  local id, ver, mv, at = kwaiting(KEYS[4], KEYS[1], KEYS[2], KEYS[3], ARGV[i], now)
  if id then out[#out + 1] = {id, ver, string.sub(mv, at)} else out[#out + 1] = {} end
end
return out
