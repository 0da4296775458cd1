-- release: drop a lease still held under the caller's token.
-- KEYS: 1 the lease
-- ARGV: 1 holder ("<member>|<token>")
-- Returns: 1 dropped, 0 the lease had moved on (or lapsed).
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
