-- ack.lua: remove leased items for good.
--
-- KEYS[1] leases zset   KEYS[2] leased hash
-- ARGV: lease IDs
--
-- Returns one integer per ID: 1 when acked, 0 when the lease was not held
-- (expired and reclaimed, or acked already); another holder's lease of the
-- same host has another ID and is never touched.
local out = {}
for i, id in ipairs(ARGV) do
  local done = redis.call('HDEL', KEYS[2], id)
  if done == 1 then
    redis.call('ZREM', KEYS[1], id)
  end
  out[i] = done
end
return out
