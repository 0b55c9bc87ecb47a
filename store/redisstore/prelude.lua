-- prelude.lua: put before the lease scripts (extend, leaseack, reclaim,
-- stats); it defines the helpers they share.

-- clock(arg) is arg when it is a number of Unix ms (a test's clock), else
-- the Redis server's clock in Unix ms, so that the clocks of the probes of
-- a fleet never matter.
local function clock(arg)
  local now = tonumber(arg)
  if now then
    return now
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- counter_ok(key) reports whether key is missing or holds an integer, as
-- INCRBY needs. Scripts check it before their first write: Redis does not
-- undo a script's writes, so a counter another program spoiled must stop
-- the script before it has moved anything.
local function counter_ok(key)
  local n = redis.call('GET', key)
  return not n or string.match(n, '^%-?%d+$') ~= nil
end

-- not_integer is the error a script returns when counter_ok fails, the
-- one INCRBY itself would give.
local not_integer = 'ERR value is not an integer or out of range'

