-- Helpers prepended to park.lua and lease.lua (waiting.go, lease.go).
-- waiting(z, h, now) drops the members of z past their expiry (and their h entries) and
-- returns the slots the rest stand for: one each, or their h count.
local function waiting(z, h, now)
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  if #gone > 0 then
    redis.call('ZREMRANGEBYSCORE', z, '-inf', now)
    redis.call('HDEL', h, unpack(gone))
  end
  local n = redis.call('ZCARD', z)
  local counts = redis.call('HVALS', h)
  for _, c in ipairs(counts) do n = n + tonumber(c) - 1 end
  return n
end

-- keep(z, h, now, exp) makes both keys live at least until exp.
local function keep(z, h, now, exp)
  if redis.call('PTTL', z) < exp - now then redis.call('PEXPIRE', z, exp - now) end
  if redis.call('EXISTS', h) == 1 and redis.call('PTTL', h) < exp - now then
    redis.call('PEXPIRE', h, exp - now)
  end
end
