-- reclaim.lua: claim expired leases, and items an older worker left in the
-- (prelude.lua is put before this script: it defines clock and counter_ok.)
-- legacy processing list, for the caller to settle with finish.lua.
--
-- KEYS[1] leases zset (members "<lease ID> <item bytes>", scored by deadline)
-- KEYS[2] lease ID counter   KEYS[3] legacy processing list
-- KEYS[4] legacy noticed hash (item bytes -> first seen, Unix ms)
-- ARGV[1] now, Unix ms, or "" for the server's clock
-- ARGV[2] ttl ms   ARGV[3] at most this many items
--
-- An expired lease (deadline <= now) is moved to a fresh lease ID held by the
-- caller for ttl: the old holder's ID is gone at once, and if the caller dies
-- before settling, the claim itself expires and is reclaimed again. A legacy
-- item (no lease record) is noted when first seen and claimed the same way
-- once ttl has passed since; notes of items no longer in the list are dropped.
--
-- Members no lease has are claimed too, so that they reach dead instead of
-- staying in flight for ever: a deadline more than ten years ahead (+inf
-- included), and a member without the space after its ID (claimed whole).
--
-- Returns {now, id1, item1, id2, item2, ...}.
local now = clock(ARGV[1])
local ttl, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {now}
local claimed = {}

-- Fail before the first write if a key has a type another program gave it
-- (the caller names it), or the counter is not a number: Redis does not
-- undo a script's writes, and leases removed but not claimed would be lost.
redis.call('LLEN', KEYS[3])
redis.call('HLEN', KEYS[4])
if not counter_ok(KEYS[2]) then
  return redis.error_reply(not_integer)
end

local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
if #expired < limit then
  local far = redis.call('ZRANGEBYSCORE', KEYS[1], string.format('(%d', now + 315360000000), '+inf',
    'LIMIT', 0, limit - #expired)
  for _, member in ipairs(far) do
    expired[#expired + 1] = member
  end
end
if #expired > 0 then
  redis.call('ZREM', KEYS[1], unpack(expired))
end
for _, member in ipairs(expired) do
  local cut = string.find(member, ' ', 1, true)
  claimed[#claimed + 1] = cut and string.sub(member, cut + 1) or member
end

if #claimed < limit and redis.call('EXISTS', KEYS[3]) + redis.call('EXISTS', KEYS[4]) > 0 then
  local count = {}
  for _, raw in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do
    count[raw] = (count[raw] or 0) + 1
  end
  local noticed = redis.call('HGETALL', KEYS[4])
  for i = 1, #noticed, 2 do
    if not count[noticed[i]] then
      redis.call('HDEL', KEYS[4], noticed[i])
    end
  end
  for raw, n in pairs(count) do
    local first = tonumber(redis.call('HGET', KEYS[4], raw))
    if not first then
      redis.call('HSET', KEYS[4], raw, now)
    elseif now - first >= ttl then
      local taken = 0
      while taken < n and #claimed < limit do
        redis.call('LREM', KEYS[3], 1, raw)
        claimed[#claimed + 1] = raw
        taken = taken + 1
      end
      if taken == n then
        redis.call('HDEL', KEYS[4], raw)
      end
    end
  end
end

if #claimed == 0 then
  return out
end
local seq = redis.call('INCRBY', KEYS[2], #claimed) - #claimed
-- string.format('%d'), not Lua's float formatting (see leaseack.lua).
local suffix, deadline = string.format('-%d', now), string.format('%d', now + ttl)
local z = {}
for i, raw in ipairs(claimed) do
  local id = string.format('%d', seq + i) .. suffix
  z[2 * i - 1] = deadline
  z[2 * i] = id .. ' ' .. raw
  out[#out + 1] = id
  out[#out + 1] = raw
end
redis.call('ZADD', KEYS[1], unpack(z))
return out
