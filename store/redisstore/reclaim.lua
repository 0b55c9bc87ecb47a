-- reclaim.lua: claim expired leases, and items an older worker left in the
-- legacy processing list, for the caller to settle with finish.lua.
--
-- KEYS[1] leases zset   KEYS[2] leased hash   KEYS[3] lease ID counter
-- KEYS[4] legacy processing list   KEYS[5] legacy noticed hash (item bytes -> first seen, ms)
-- ARGV[1] now, Unix ms, or "" for the server's clock
-- ARGV[2] ttl ms   ARGV[3] at most this many items
--
-- An expired lease (deadline <= now) is moved to a fresh lease ID held by the
-- caller for ttl: the old holder's ID is gone at once, and if the caller dies
-- before settling, the claim itself expires and is reclaimed again. A legacy
-- item (no lease record) is noted when first seen and claimed the same way
-- once ttl has passed since; notes of items no longer in the list are dropped.
--
-- Returns {now, id1, item1, id2, item2, ...}.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local ttl, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {now}
local claimed = {}

local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
for _, id in ipairs(expired) do
  local raw = redis.call('HGET', KEYS[2], id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('ZREM', KEYS[1], id)
  if raw then
    claimed[#claimed + 1] = raw
  end
end

if #claimed < limit and redis.call('EXISTS', KEYS[4]) + redis.call('EXISTS', KEYS[5]) > 0 then
  local count = {}
  for _, raw in ipairs(redis.call('LRANGE', KEYS[4], 0, -1)) do
    count[raw] = (count[raw] or 0) + 1
  end
  local noticed = redis.call('HGETALL', KEYS[5])
  for i = 1, #noticed, 2 do
    if not count[noticed[i]] then
      redis.call('HDEL', KEYS[5], noticed[i])
    end
  end
  for raw, n in pairs(count) do
    local first = tonumber(redis.call('HGET', KEYS[5], raw))
    if not first then
      redis.call('HSET', KEYS[5], raw, now)
    elseif now - first >= ttl then
      local taken = 0
      while taken < n and #claimed < limit do
        redis.call('LREM', KEYS[4], 1, raw)
        claimed[#claimed + 1] = raw
        taken = taken + 1
      end
      if taken == n then
        redis.call('HDEL', KEYS[5], raw)
      end
    end
  end
end

if #claimed == 0 then
  return out
end
local seq = redis.call('INCRBY', KEYS[3], #claimed) - #claimed
local z, h = {}, {}
for _, raw in ipairs(claimed) do
  seq = seq + 1
  local id = string.format('%d-%d', seq, now)
  z[#z + 1] = now + ttl
  z[#z + 1] = id
  h[#h + 1] = id
  h[#h + 1] = raw
  out[#out + 1] = id
  out[#out + 1] = raw
end
redis.call('ZADD', KEYS[1], unpack(z))
redis.call('HSET', KEYS[2], unpack(h))
return out
