-- extend.lua: move a held lease's deadline.
--
-- KEYS[1] leases zset
-- ARGV[1] lease member ("<lease ID> <item bytes>")
-- ARGV[2] now, Unix ms, or "" for the server's clock   ARGV[3] ttl ms
--
-- Returns the new deadline (Unix ms), or 0 when the lease is not held.
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local deadline = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], 'XX', deadline, ARGV[1])
return deadline
