-- queued.lua: which hosts are queued to be probed.
-- (buckets.lua is put before this script: it defines the host table.)
--
-- KEYS[1] meta of the host table
-- ARGV hosts
--
-- Returns one integer per host: 1 when its record is "q" (seeded or
-- requeued, not yet done, not dead), else 0.
local t = hosts_open(KEYS[1])
local out = {}
for i = 1, #ARGV do
  out[i] = rec_get(t, ARGV[i]) == 'q' and 1 or 0
end
return out
