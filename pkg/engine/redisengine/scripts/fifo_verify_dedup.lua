-- fifo_verify_dedup: was the message holding a dedup reservation stored? If not and fence is "1", fence
-- it: its pending store (if its sender is alive at all) will be refused by fifo_send, so the
-- reservation can be taken over without ever answering "duplicate" for a message that was
-- never stored, and without storing the same dedup id twice.
-- KEYS: 1 dd, 2 gi
-- ARGV: 1 message id, 2 now ms, 3 fence ("1" or "0")
-- Returns {stored, seq}: stored 1 or 0 (not stored, and fenced when asked); seq the stored
-- message's sequence number while it is in its group (its gi entry ends in 16 hex digits of
-- it), else 0 (the caller then has the marker's).
if redis.call('ZSCORE', KEYS[1], 'S' .. ARGV[1]) then
  local prefix = redis.call('HGET', KEYS[2], ARGV[1])
  if prefix and #prefix >= 16 then return {1, tonumber(string.sub(prefix, -16), 16) or 0} end
  return {1, 0}
end
if ARGV[3] == '1' then redis.call('ZADD', KEYS[1], 'NX', ARGV[2], 'A' .. ARGV[1]) end
return {0, 0}
