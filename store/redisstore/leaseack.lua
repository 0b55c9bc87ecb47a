-- leaseack.lua: the workers' hot path in one call: keep the last probes of
-- the hosts some callers finished and ack their leases, then lease up to N
-- of the oldest pending items for others.
-- (prelude.lua is put before this script: it defines clock and counter_ok;
-- so is buckets.lua, which defines the host table, for the calls that keep
-- probes.)
--
-- KEYS[1] pending list   KEYS[2] leases zset   KEYS[3] lease ID counter
-- KEYS[4] this store's replies hash (see below)
-- KEYS[5] meta of the host table
-- ARGV[1] call token, an integer rising with every call of this store
-- ARGV[2] now, Unix ms, or "" to use the server's clock
-- ARGV[3] A, how many leases to ack; ARGV[4] .. ARGV[3+A] their members
-- ARGV[4+A] P, how many probes to keep; ARGV[5+A] their hosts' hashes,
-- packed (lh_unpacked); then P pairs (host, "<unix s> <outcome>")
-- ARGV[6+A+2P], ...  pairs of (count, ttl ms), one pair per lease caller
--
-- Each probe becomes its host's record, "<unix s> <outcome>", replacing
-- the one before (an item pushed by hand gets a record once probed). Probes
-- are kept before any ack, whether or not the lease turns out held: a host
-- whose lease was lost is probed again and its record rewritten.
--
-- A lease is one member of the leases zset, "<lease ID> <item bytes>", its
-- score the deadline (Unix ms). Lease IDs are "<seq>-<lease start ms>", seq
-- from the counter, so an ID is never reused.
--
-- Returns {now, A ack results, member1, member2, ...}: each leased item as
-- its member, "<lease ID> <item bytes>", for the caller to split. An ack result is
-- 1 when acked, 0 when the lease was not held (expired and reclaimed, or
-- acked already); another holder's lease of the same host has another ID and
-- is never touched. Leased items come oldest first, filling the callers'
-- counts in order.
--
-- A client that lost the reply (connection cut after the call ran) retries
-- with the same token and ARGV; the outcome kept in the replies hash under
-- "h<token>" is then answered again instead of acking or leasing twice. It
-- is "<now> a<ack digits> <seq before> <items leased>": the lease IDs follow
-- from it, and the items are found again among the leases by deadline. The
-- last 4096 outcomes are kept: the store's other batch loop goes on calling
-- while a cut call waits out the client's retry backoff (up to 512 ms), and
-- a window of 16 was seen to drop the outcome before the retry came.
local replies, token = KEYS[4], tonumber(ARGV[1])
local prev = redis.call('HGET', replies, 'h' .. token)
if prev then
  local now, acks, seq, count = string.match(prev, '^(%d+) a(%d*) (%d+) (%d+)$')
  now, seq, count = tonumber(now), tonumber(seq), tonumber(count)
  local out = {now}
  for d in string.gmatch(acks, '%d') do
    out[#out + 1] = tonumber(d)
  end
  local nack = tonumber(ARGV[3])
  local first = 6 + nack + 2 * tonumber(ARGV[4 + nack])
  local arg, left, deadline = first - 2, 0, 0
  local found = {} -- deadline -> lease ID -> item bytes
  for i = 1, count do
    while left == 0 do
      arg = arg + 2
      left = tonumber(ARGV[arg])
      deadline = now + tonumber(ARGV[arg + 1])
    end
    left = left - 1
    if not found[deadline] then
      found[deadline] = {}
      for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], deadline, deadline)) do
        local cut = string.find(m, ' ', 1, true)
        if cut then -- a member without one was not written here
          found[deadline][string.sub(m, 1, cut - 1)] = m
        end
      end
    end
    local m = found[deadline][string.format('%d-%d', seq + i, now)] -- gone only if reclaimed since
    if m then
      out[#out + 1] = m
    end
  end
  return out
end

local now = clock(ARGV[2])
local out = {now}
local acks = {}
local nack = tonumber(ARGV[3])
local nprobe = tonumber(ARGV[4 + nack])
local first = 6 + nack + 2 * nprobe
local total = 0
for i = first, #ARGV, 2 do
  total = total + tonumber(ARGV[i])
end
-- Fail before the first write if a key another program wrote would make
-- a later call fail: Redis does not undo a script's writes, and items
-- popped but not recorded as leased would be lost. (A wrong type fails
-- these reads; the caller names the key.)
if total > 0 then
  redis.call('LLEN', KEYS[1])
  if not counter_ok(KEYS[3]) then
    return redis.error_reply(not_integer)
  end
end
if total > 0 or nack > 0 then
  redis.call('ZCARD', KEYS[2])
end
if nprobe > 0 then
  local t = hosts_open(KEYS[5]) -- its reads fail on a wrong type, before any write
  local xs = ARGV[5 + nack]
  for i = 1, nprobe do
    rec_put(t, ARGV[4 + nack + 2 * i], ARGV[5 + nack + 2 * i], lh_unpacked(xs, i))
  end
  lh_save(t)
end
if nack > 0 then
  -- One ZREM per lease tells which were held; ZMSCORE first would format
  -- every score as a string just to test it.
  for i = 1, nack do
    local held = redis.call('ZREM', KEYS[2], ARGV[3 + i])
    out[i + 1] = held
    acks[i] = held == 1 and '1' or '0'
  end
end

local items = total > 0 and redis.call('RPOP', KEYS[1], total)
local seq, count = 0, 0
if items then
  count = #items
  seq = redis.call('INCRBY', KEYS[3], count) - count
  -- Numbers are formatted with string.format('%d'): Lua's own
  -- number-to-string (concatenation, tostring, a number passed to
  -- redis.call) goes through floating-point printf, several times dearer.
  local suffix = string.format('-%d ', now)
  local z, o = {}, #out
  local arg, left = first, tonumber(ARGV[first])
  local deadline = string.format('%d', now + tonumber(ARGV[first + 1]))
  for i, raw in ipairs(items) do
    while left == 0 do
      arg = arg + 2
      left = tonumber(ARGV[arg])
      deadline = string.format('%d', now + tonumber(ARGV[arg + 1]))
    end
    left = left - 1
    local m = string.format('%d', seq + i) .. suffix .. raw
    z[2 * i - 1] = deadline
    z[2 * i] = m
    out[o + 1] = m
    o = o + 1
  end
  redis.call('ZADD', KEYS[2], unpack(z))
end

redis.call('HSET', replies, 'h' .. token,
  string.format('%d a%s %d %d', now, table.concat(acks), seq, count))
redis.call('HDEL', replies, 'h' .. (token - 4096))
redis.call('PEXPIRE', replies, 600000)
return out
