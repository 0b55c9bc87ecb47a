-- probelist.lua: the beats of the probes whose last beat is alive.
-- KEYS[1] hash: probe ID → beat JSON; KEYS[2] sorted set: probe ID → expiry (Unix ms)
-- ARGV[1] now (Unix ms, or "" for the server's clock)
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. clock(ARGV[1]), '+inf')
if #ids == 0 then
  return {}
end
return redis.call('HMGET', KEYS[1], unpack(ids))
