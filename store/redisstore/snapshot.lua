-- snapshot.lua: copy the queue's state keys, for Dump to read at leisure.
-- (buckets.lua is put before this script: it defines the host table.)
--
-- KEYS[1..n] the state keys   KEYS[n+1..2n] where to copy them, in the same order
-- ARGV[1] seconds the copies live (they are deleted when Dump ends; this is
-- the fallback if it never does)
-- ARGV[2] meta of the host table   ARGV[3] meta of the copy's host table
-- (the meta keys are among KEYS too, and copied with them)
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
local from, to = hosts_open(ARGV[2]), hosts_open(ARGV[3])
for i = 0, lh_buckets(from) - 1 do
  local src, dst = lh_bucket(from, i), lh_bucket(to, i)
  if redis.call('COPY', src, dst, 'REPLACE') == 1 then
    redis.call('EXPIRE', dst, ARGV[1])
  end
end
local t = redis.call('TIME')
return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
