-- probed.lua: keep hosts' last probes.
--
-- KEYS[1] seen set   KEYS[2] probed hash
-- ARGV pairs (host, "<unix seconds> <outcome>")
--
-- Each host is set in the probed hash (replacing its last probe) and added
-- to the seen set, so an item pushed by hand is seen once probed. Returns
-- how many pairs were kept.
redis.call('HLEN', KEYS[2]) -- a wrong type fails here, before any write
local hosts = {}
for i = 1, #ARGV, 2 do
  hosts[#hosts + 1] = ARGV[i]
end
redis.call('SADD', KEYS[1], unpack(hosts))
redis.call('HSET', KEYS[2], unpack(ARGV))
return #hosts
