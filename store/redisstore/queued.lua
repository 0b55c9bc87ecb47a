-- queued.lua: which hosts are queued to be probed.
--
-- KEYS[1] seen set   KEYS[2] probed hash
-- ARGV hosts
--
-- Returns one integer per host: 1 when it is in the seen set and has no
-- probe record (seeded or requeued, not yet done), else 0.
local seen = redis.call('SMISMEMBER', KEYS[1], unpack(ARGV))
local probed = redis.call('HMGET', KEYS[2], unpack(ARGV))
local out = {}
for i = 1, #ARGV do
  out[i] = (seen[i] == 1 and not probed[i]) and 1 or 0
end
return out
