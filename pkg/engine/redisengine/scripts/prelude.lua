-- Helpers prepended to every script (see scripts.go). Message state is the string
-- "attempt|receivedAtMs|expiresAtMs|sentAtMs"; attempt is the receiveCount.
local function parse_state(st)
  if not st then return nil end
  local a, ra, ea, sa = string.match(st, '^(%d+)|(%d+)|(%d+)|(%d+)$')
  if not a then return nil end
  return tonumber(a), tonumber(ra), tonumber(ea), tonumber(sa)
end
local function fmt_state(a, ra, ea, sa)
  return string.format('%d|%d|%d|%d', a, ra, ea, sa)
end
local function ms(n)
  return string.format('%d', n)
end
-- del removes every trace of a message from a partition. K = {r, f, m, s, x}.
local function del(K, id)
  redis.call('ZREM', K[1], id)
  redis.call('ZREM', K[2], id)
  redis.call('HDEL', K[3], id)
  redis.call('HDEL', K[4], id)
  redis.call('ZREM', K[5], id)
end
-- outbox_value is what a dead-letter move leaves in the outbox for Go to finish:
-- "1|<atMs>|<sentAtMs>|<len(reason)>|" .. reason .. payload.
local function outbox_value(at, sa, reason, payload)
  return string.format('1|%d|%d|%d|', at, sa, #reason) .. reason .. payload
end
