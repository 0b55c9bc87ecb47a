-- finish.lua: end leases by pushing new bytes to pending or dead.
--
-- KEYS[1] leases zset   KEYS[2] leased hash   KEYS[3] pending list   KEYS[4] dead list
-- ARGV: triples (lease ID, "pending" or "dead", bytes to push). To pending the
-- bytes go to the back of the line (LPUSH), to dead at the end (RPUSH).
--
-- Returns one integer per triple: 1 when done, 0 when the lease was not held
-- (then nothing is pushed for it).
local out = {}
for i = 1, #ARGV, 3 do
  local done = redis.call('HDEL', KEYS[2], ARGV[i])
  if done == 1 then
    redis.call('ZREM', KEYS[1], ARGV[i])
    if ARGV[i + 1] == 'dead' then
      redis.call('RPUSH', KEYS[4], ARGV[i + 2])
    else
      redis.call('LPUSH', KEYS[3], ARGV[i + 2])
    end
  end
  out[#out + 1] = done
end
return out
