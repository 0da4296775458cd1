-- consumer_list: a page of the queue's consumers seen after ARGV[2], in consumerId order, after the
-- cursor's consumerId. Consumers not seen since then are skipped; the caller drops those that
-- hold nothing (consumer_forget.lua) once it has counted their holdings.
-- KEYS: 1 the queue's consumer registry (HASH consumerId -> "maxBacklog|lastSeenMs"), 2 the
--       queue's consumer names (ZSET, scores 0)
-- ARGV: 1 cursor consumerId ("" for the first page), 2 seen-since ms, 3 page size, 4 scan bound
-- Returns: {more (0/1), last name scanned, names scanned, id1, "maxBacklog|lastSeenMs", id2, …,
--          "", stale1, stale2, …}: more = 1 when a listed consumer follows the page; when the
--          scan bound was reached first (names scanned = ARGV[4], more = 0) the caller goes on
--          from the last name scanned; then "" and the stale ids scanned
local since = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local from = '-'
if ARGV[1] ~= '' then from = '(' .. ARGV[1] end
local names = redis.call('ZRANGEBYLEX', KEYS[2], from, '+', 'LIMIT', 0, tonumber(ARGV[4]))
local page, stale, n, more = {}, {}, 0, 0
for _, id in ipairs(names) do
  local v = redis.call('HGET', KEYS[1], id)
  local seen = v and tonumber(string.match(v, '|(%d+)$')) or 0
  if seen > since then
    if n == limit then more = 1 break end
    n = n + 1
    page[#page + 1] = id
    page[#page + 1] = v
  else
    stale[#stale + 1] = id
  end
end
local last = names[#names] or ''
local out = {more, last, #names}
for _, x in ipairs(page) do out[#out + 1] = x end
out[#out + 1] = ''
for _, x in ipairs(stale) do out[#out + 1] = x end
return out
