-- release.lua: return held leases to pending unchanged, at the front.
--
-- KEYS[1] leases zset   KEYS[2] pending list
-- ARGV: lease members ("<lease ID> <item bytes>") in the order leased
--
-- The items go back where Lease takes from (RPUSH), the first one last, so
-- they are leased again in their old order before anything else. Returns
-- how many leases were held and returned.
redis.call('LLEN', KEYS[2]) -- a wrong type fails here, before any write
local n = 0
for i = #ARGV, 1, -1 do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    local cut = string.find(ARGV[i], ' ', 1, true)
    redis.call('RPUSH', KEYS[2], string.sub(ARGV[i], cut + 1))
    n = n + 1
  end
end
return n
