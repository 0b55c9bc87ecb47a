-- release.lua: return held leases to pending unchanged, at the front.
--
-- KEYS[1] leases zset   KEYS[2] leased hash   KEYS[3] pending list
-- ARGV: lease IDs in the order they were leased
--
-- The items go back where Lease takes from (RPUSH), the first ID's item last,
-- so they are leased again in their old order before anything else.
-- Returns how many leases were held and returned.
local n = 0
for i = #ARGV, 1, -1 do
  local raw = redis.call('HGET', KEYS[2], ARGV[i])
  if raw then
    redis.call('HDEL', KEYS[2], ARGV[i])
    redis.call('ZREM', KEYS[1], ARGV[i])
    redis.call('RPUSH', KEYS[3], raw)
    n = n + 1
  end
end
return n
