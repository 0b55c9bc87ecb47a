-- load.lua: put loaded state in place, only if the queue holds none.
-- (buckets.lua is put before this script: it defines the host table.)
--
-- KEYS[1..n] the state keys   KEYS[n+1..2n] the staged keys, same order
-- KEYS[2n+1] lease ID counter
-- ARGV[1] the highest lease sequence number among the loaded leases
-- ARGV[2] meta of the host table   ARGV[3] meta of the staged host table
-- (both are among KEYS too)
--
-- Returns 1 when the staged keys (and the staged host table's buckets)
-- were renamed into place, 0 (and nothing changed) when any state key
-- exists.
local counter = redis.call('GET', KEYS[#KEYS])
if counter and not string.match(counter, '^%-?%d+$') then
  return redis.error_reply('ERR value is not an integer or out of range')
end
local n = (#KEYS - 1) / 2
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return 0
  end
end
local to, from = hosts_open(ARGV[2]), hosts_open(ARGV[3])
for i = 0, lh_buckets(from) - 1 do
  local src = lh_bucket(from, i)
  if redis.call('EXISTS', src) == 1 then
    redis.call('RENAME', src, lh_bucket(to, i))
  end
end
for i = 1, n do
  if redis.call('EXISTS', KEYS[n + i]) == 1 then
    redis.call('RENAME', KEYS[n + i], KEYS[i])
  end
end
local seq = KEYS[2 * n + 1]
if tonumber(ARGV[1]) > tonumber(counter or '0') then
  redis.call('SET', seq, ARGV[1])
end
return 1
