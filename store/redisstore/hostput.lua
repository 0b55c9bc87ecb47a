-- hostput.lua: set records of the host table, for Load's staging.
-- (buckets.lua is put before this script: it defines the host table.)
--
-- KEYS[1] meta of the host table
-- ARGV pairs (host, record)
redis.call('HLEN', KEYS[1])
local t = hosts_open(KEYS[1])
for i = 1, #ARGV, 2 do
  rec_put(t, ARGV[i], ARGV[i + 1])
end
lh_save(t)
return t.n
