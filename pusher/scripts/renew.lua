-- renew: extend a lease still held under the caller's token.
-- KEYS: 1 the lease
-- ARGV: 1 holder ("<member>|<token>"), 2 ttl ms
-- Returns: 1 extended, 0 the lease has moved on (or lapsed).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
