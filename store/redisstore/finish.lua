-- finish.lua: end leases by pushing new bytes to pending or dead.
-- (buckets.lua is put before this script: it defines the host table.)
--
-- KEYS[1] leases zset   KEYS[2] pending list   KEYS[3] dead list
-- KEYS[4] this store's replies hash   KEYS[5] meta of the host table
-- ARGV[1] call token, an integer rising with every call of this store
-- ARGV[2..]: triples (lease member "<lease ID> <item bytes>", "pending" or
-- "dead", bytes to push). To pending the bytes go to the back of the line
-- (LPUSH), to dead at the end (RPUSH). A host that goes to dead gets the
-- record "d" (not queued), unless it has a probe record (an item pushed by
-- hand for a done host), which stays.
--
-- Returns one integer per triple: 1 when done, 0 when the lease was not held
-- (then nothing is pushed for it). A retry with the same token (the client
-- lost the reply) gets the same answer from the replies hash ("f<token>",
-- the last 4096 kept) and changes nothing.
local replies, token = KEYS[4], tonumber(ARGV[1])
local prev = redis.call('HGET', replies, 'f' .. token)
if prev then
  local out = {}
  for d in string.gmatch(prev, '%d') do
    out[#out + 1] = tonumber(d)
  end
  return out
end
-- Fail before the first write if a key has a type another program gave it
-- (the caller names it): a lease removed and its item not pushed is lost.
redis.call('ZCARD', KEYS[1])
redis.call('LLEN', KEYS[2])
redis.call('LLEN', KEYS[3])
redis.call('HLEN', KEYS[5])
local t = hosts_open(KEYS[5])
-- died names the host of dead entry e as not queued.
local function died(e)
  local ok, d = pcall(cjson.decode, e)
  if not ok or type(d) ~= 'table' or type(d.item) ~= 'table' or type(d.item.host) ~= 'string' then
    return
  end
  local h, v = d.item.host, rec_get(t, d.item.host)
  if h ~= '' and (not v or v == 'q') then
    rec_put(t, h, 'd')
  end
end
local out = {}
for i = 2, #ARGV, 3 do
  local done = redis.call('ZREM', KEYS[1], ARGV[i])
  if done == 1 then
    if ARGV[i + 1] == 'dead' then
      redis.call('RPUSH', KEYS[3], ARGV[i + 2])
      died(ARGV[i + 2])
    else
      redis.call('LPUSH', KEYS[2], ARGV[i + 2])
    end
  end
  out[#out + 1] = done
end
lh_save(t)
redis.call('HSET', replies, 'f' .. token, table.concat(out))
redis.call('HDEL', replies, 'f' .. (token - 4096))
redis.call('PEXPIRE', replies, 600000)
return out
