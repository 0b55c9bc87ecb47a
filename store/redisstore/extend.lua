-- extend.lua: move a held lease's deadline.
-- (prelude.lua is put before this script: it defines clock and counter_ok.)
--
-- KEYS[1] leases zset
-- ARGV[1] lease member ("<lease ID> <item bytes>")
-- ARGV[2] now, Unix ms, or "" for the server's clock   ARGV[3] ttl ms
--
-- Returns the new deadline (Unix ms), or 0 when the lease is not held.
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local now = clock(ARGV[2])
local deadline = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], 'XX', deadline, ARGV[1])
return deadline
