-- lease.lua: move up to N of the oldest pending items into leases.
--
-- KEYS[1] pending list      KEYS[2] leases zset (lease ID -> deadline ms)
-- KEYS[3] leased hash (lease ID -> item bytes)   KEYS[4] lease ID counter
-- ARGV[1] now, Unix ms, or "" to use the server's clock
-- ARGV[2], ARGV[3], ...  pairs of (count, ttl ms), one pair per caller
--
-- Returns {now, id1, item1, id2, item2, ...}: the items oldest first, filling
-- the callers' counts in order. Lease IDs are "<seq>-<lease start ms>", seq
-- from the counter, so an ID is never reused for another lease.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local total = 0
for i = 2, #ARGV, 2 do
  total = total + tonumber(ARGV[i])
end
local out = {now}
if total <= 0 then
  return out
end
local items = redis.call('RPOP', KEYS[1], total)
if not items then
  return out
end
local seq = redis.call('INCRBY', KEYS[4], #items) - #items
local z, h = {}, {}
local arg, left = 2, tonumber(ARGV[2])
for _, raw in ipairs(items) do
  while left == 0 do
    arg = arg + 2
    left = tonumber(ARGV[arg])
  end
  left = left - 1
  seq = seq + 1
  local id = string.format('%d-%d', seq, now)
  z[#z + 1] = now + tonumber(ARGV[arg + 1])
  z[#z + 1] = id
  h[#h + 1] = id
  h[#h + 1] = raw
  out[#out + 1] = id
  out[#out + 1] = raw
end
redis.call('ZADD', KEYS[2], unpack(z))
redis.call('HSET', KEYS[3], unpack(h))
return out
