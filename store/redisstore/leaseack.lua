-- leaseack.lua: the workers' hot path in one call: ack the leases of some
-- callers, then lease up to N of the oldest pending items for others.
--
-- KEYS[1] pending list      KEYS[2] leases zset (lease ID -> deadline ms)
-- KEYS[3] leased hash (lease ID -> item bytes)   KEYS[4] lease ID counter
-- KEYS[5] this store's replies hash (see below)
-- ARGV[1] call token, an integer rising with every call of this store
-- ARGV[2] now, Unix ms, or "" to use the server's clock
-- ARGV[3] A, how many lease IDs to ack; ARGV[4] .. ARGV[3+A] those IDs
-- ARGV[4+A], ARGV[5+A], ...  pairs of (count, ttl ms), one pair per lease caller
--
-- Returns {now, A ack results, id1, item1, id2, item2, ...}. An ack result is
-- 1 when acked, 0 when the lease was not held (expired and reclaimed, or
-- acked already); another holder's lease of the same host has another ID and
-- is never touched. Leased items come oldest first, filling the callers'
-- counts in order. Lease IDs are "<seq>-<lease start ms>", seq from the
-- counter, so an ID is never reused.
--
-- A client that lost the reply (connection cut after the call ran) retries
-- with the same token; the call's outcome, kept in the replies hash under
-- "h<token>" ("<now> a<ack digits> <id> <id> ..."), is then answered again
-- instead of acking or leasing twice. The last 16 outcomes are kept.
local replies, token = KEYS[5], tonumber(ARGV[1])
local prev = redis.call('HGET', replies, 'h' .. token)
if prev then
  local out, i = {}, 0
  for f in string.gmatch(prev, '%S+') do
    i = i + 1
    if i == 1 then
      out[1] = tonumber(f)
    elseif i == 2 then
      for d in string.gmatch(string.sub(f, 2), '%d') do
        out[#out + 1] = tonumber(d)
      end
    else
      local raw = redis.call('HGET', KEYS[3], f)
      if raw then
        out[#out + 1] = f
        out[#out + 1] = raw
      end
    end
  end
  return out
end

local function remember(out, nack)
  local acks = {}
  for i = 2, 1 + nack do
    acks[#acks + 1] = out[i]
  end
  local ids = {}
  for i = 2 + nack, #out, 2 do
    ids[#ids + 1] = out[i]
  end
  redis.call('HSET', replies, 'h' .. token,
    out[1] .. ' a' .. table.concat(acks) .. ' ' .. table.concat(ids, ' '))
  redis.call('HDEL', replies, 'h' .. (token - 16))
  redis.call('PEXPIRE', replies, 600000)
  return out
end

local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local out = {now}
local nack = tonumber(ARGV[3])
if nack > 0 then
  local scores = redis.call('ZMSCORE', KEYS[2], unpack(ARGV, 4, 3 + nack))
  local held = {}
  for i = 1, nack do
    if scores[i] then
      out[#out + 1] = 1
      held[#held + 1] = ARGV[3 + i]
    else
      out[#out + 1] = 0
    end
  end
  if #held > 0 then
    redis.call('ZREM', KEYS[2], unpack(held))
    redis.call('HDEL', KEYS[3], unpack(held))
  end
end

local first = 4 + nack
local total = 0
for i = first, #ARGV, 2 do
  total = total + tonumber(ARGV[i])
end
if total <= 0 then
  return remember(out, nack)
end
local items = redis.call('RPOP', KEYS[1], total)
if not items then
  return remember(out, nack)
end
local seq = redis.call('INCRBY', KEYS[4], #items) - #items
local suffix = '-' .. now
local z, h = {}, {}
local arg, left = first, tonumber(ARGV[first])
local deadline = now + tonumber(ARGV[first + 1])
for _, raw in ipairs(items) do
  while left == 0 do
    arg = arg + 2
    left = tonumber(ARGV[arg])
    deadline = now + tonumber(ARGV[arg + 1])
  end
  left = left - 1
  seq = seq + 1
  local id = seq .. suffix
  z[#z + 1] = deadline
  z[#z + 1] = id
  h[#h + 1] = id
  h[#h + 1] = raw
  out[#out + 1] = id
  out[#out + 1] = raw
end
redis.call('ZADD', KEYS[2], unpack(z))
redis.call('HSET', KEYS[3], unpack(h))
return remember(out, nack)
