-- emitmark.lua: mark output keys emitted in a run and drop their claims.
-- (buckets.lua is put before this script: it defines the bucketed tables.)
--
-- KEYS[1] meta of the run's emitted table   KEYS[2] claims hash of the run
-- ARGV key fingerprints (signed 64-bit integers, in decimal)
--
-- Each fingerprint joins its bucket, a set of integers Redis keeps as an
-- intset: 8 bytes a key. Returns how many were new.
local t = emit_open(KEYS[1])
local added = 0
for i = 1, #ARGV do
  local n = redis.call('SADD', lh_key(t, lh_hash(ARGV[i])), ARGV[i])
  added = added + n
  lh_added(t, n)
end
for i = 1, #ARGV, 1000 do
  redis.call('HDEL', KEYS[2], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
lh_save(t)
return added
