-- fverify: was the message holding a dedup reservation stored? If not and fence is "1", fence
-- it: its pending store (if its sender is alive at all) will be refused by fsend, so the
-- reservation can be taken over without ever answering "duplicate" for a message that was
-- never stored, and without storing the same dedup id twice.
-- KEYS: 1 dd
-- ARGV: 1 message id, 2 now ms, 3 fence ("1" or "0")
-- Returns: 1 stored, 0 not stored (and fenced when asked).
if redis.call('ZSCORE', KEYS[1], 'S' .. ARGV[1]) then return 1 end
if ARGV[3] == '1' then redis.call('ZADD', KEYS[1], 'NX', ARGV[2], 'A' .. ARGV[1]) end
return 0
