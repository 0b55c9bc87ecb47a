-- probes.lua: record one probe's heartbeat and forget the probes whose
-- last beat expired.
-- KEYS[1] hash: probe ID → beat JSON; KEYS[2] sorted set: probe ID → expiry (Unix ms)
-- ARGV[1] probe ID, ARGV[2] beat JSON, ARGV[3] TTL (ms), ARGV[4] now (Unix ms, or "" for the server's clock)
local now = clock(ARGV[4])
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, id in ipairs(gone) do
  redis.call('HDEL', KEYS[1], id)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
-- The keys outlive the last probe by one TTL, so a fleet that stopped
-- leaves nothing behind.
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
