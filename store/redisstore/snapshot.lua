-- snapshot.lua: copy the queue's state keys, for Dump to read at leisure.
--
-- KEYS[1..n] the state keys   KEYS[n+1..2n] where to copy them, in the same order
-- ARGV[1] seconds the copies live (they are deleted when Dump ends; this is
-- the fallback if it never does)
--
-- COPY is server-side, so the copies are one consistent snapshot however
-- busy the queue is. Returns the server's clock, Unix ms.
local n = #KEYS / 2
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('COPY', KEYS[i], KEYS[n + i], 'REPLACE')
    redis.call('EXPIRE', KEYS[n + i], ARGV[1])
  end
end
local t = redis.call('TIME')
return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
