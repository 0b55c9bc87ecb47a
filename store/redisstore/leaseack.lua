-- leaseack.lua: the workers' hot path in one call: ack the leases of some
-- callers, then lease up to N of the oldest pending items for others.
--
-- KEYS[1] pending list   KEYS[2] leases zset   KEYS[3] lease ID counter
-- KEYS[4] this store's replies hash (see below)
-- ARGV[1] call token, an integer rising with every call of this store
-- ARGV[2] now, Unix ms, or "" to use the server's clock
-- ARGV[3] A, how many leases to ack; ARGV[4] .. ARGV[3+A] their members
-- ARGV[4+A], ARGV[5+A], ...  pairs of (count, ttl ms), one pair per lease caller
--
-- A lease is one member of the leases zset, "<lease ID> <item bytes>", its
-- score the deadline (Unix ms). Lease IDs are "<seq>-<lease start ms>", seq
-- from the counter, so an ID is never reused.
--
-- Returns {now, A ack results, id1, item1, id2, item2, ...}. An ack result is
-- 1 when acked, 0 when the lease was not held (expired and reclaimed, or
-- acked already); another holder's lease of the same host has another ID and
-- is never touched. Leased items come oldest first, filling the callers'
-- counts in order.
--
-- A client that lost the reply (connection cut after the call ran) retries
-- with the same token; the outcome kept in the replies hash under
-- "h<token>" is then answered again instead of acking or leasing twice. It
-- is "<now> a<ack digits>" and, per leased item, " <length>:<member>". The
-- last 16 outcomes are kept.
local replies, token = KEYS[4], tonumber(ARGV[1])
local prev = redis.call('HGET', replies, 'h' .. token)
if prev then
  local sp = string.find(prev, ' ', 1, true)
  local out = {tonumber(string.sub(prev, 1, sp - 1))}
  local pos = sp + 2
  local stop = (string.find(prev, ' ', pos, true) or (#prev + 1)) - 1
  for d in string.gmatch(string.sub(prev, pos, stop), '%d') do
    out[#out + 1] = tonumber(d)
  end
  pos = stop + 2
  while pos <= #prev do
    local colon = string.find(prev, ':', pos, true)
    local len = tonumber(string.sub(prev, pos, colon - 1))
    local member = string.sub(prev, colon + 1, colon + len)
    local cut = string.find(member, ' ', 1, true)
    out[#out + 1] = string.sub(member, 1, cut - 1)
    out[#out + 1] = string.sub(member, cut + 1)
    pos = colon + len + 2
  end
  return out
end

local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local out = {now}
local acks = {}
local nack = tonumber(ARGV[3])
if nack > 0 then
  local scores = redis.call('ZMSCORE', KEYS[2], unpack(ARGV, 4, 3 + nack))
  local held = {}
  for i = 1, nack do
    if scores[i] then
      acks[i] = 1
      held[#held + 1] = ARGV[3 + i]
    else
      acks[i] = 0
    end
    out[#out + 1] = acks[i]
  end
  if #held > 0 then
    redis.call('ZREM', KEYS[2], unpack(held))
  end
end

local record = {now .. ' a' .. table.concat(acks)}
local first = 4 + nack
local total = 0
for i = first, #ARGV, 2 do
  total = total + tonumber(ARGV[i])
end
local items = total > 0 and redis.call('RPOP', KEYS[1], total)
if items then
  local seq = redis.call('INCRBY', KEYS[3], #items) - #items
  local suffix = '-' .. now
  local z = {}
  local arg, left = first, tonumber(ARGV[first])
  local deadline = now + tonumber(ARGV[first + 1])
  for i, raw in ipairs(items) do
    while left == 0 do
      arg = arg + 2
      left = tonumber(ARGV[arg])
      deadline = now + tonumber(ARGV[arg + 1])
    end
    left = left - 1
    local id = (seq + i) .. suffix
    local member = id .. ' ' .. raw
    z[2 * i - 1] = deadline
    z[2 * i] = member
    out[#out + 1] = id
    out[#out + 1] = raw
    record[#record + 1] = #member .. ':' .. member
  end
  redis.call('ZADD', KEYS[2], unpack(z))
end

redis.call('HSET', replies, 'h' .. token, table.concat(record, ' '))
redis.call('HDEL', replies, 'h' .. (token - 16))
redis.call('PEXPIRE', replies, 600000)
return out
