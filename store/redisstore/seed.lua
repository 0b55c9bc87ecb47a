-- seed.lua: add hosts not seen before to pending.
-- (buckets.lua is put before this script: it defines the host table.)
--
-- KEYS[1] pending list   KEYS[2] meta of the host table ("<base>#meta")
-- ARGV[1] ts, Unix seconds   ARGV[2] the hosts' hashes, packed (lh_unpacked)
-- ARGV[3..] normalised hosts (at most 1,000)
--
-- Hosts without a record (and not repeated earlier in ARGV) get the record
-- "q" (queued) and are pushed to pending, in order, as the item JSON of the
-- older spyder's list protocol {"host":"a.com","ts":1705312200,"attempt":0}
-- (normalised hosts need no escaping). Returns how many were pushed.
--
-- A short host is one HSETNX into its bucket, which tells whether it was
-- new (rec_add).
redis.call('LLEN', KEYS[1]) -- a wrong type fails here, before any write
local t = hosts_open(KEYS[2])
local ts, xs = ARGV[1], ARGV[2]
local items, ni = {}, 0
for i = 3, #ARGV do
  local h = ARGV[i]
  if rec_add(t, h, 'q', lh_unpacked(xs, i - 2)) then
    ni = ni + 1
    items[ni] = '{"host":"' .. h .. '","ts":' .. ts .. ',"attempt":0}'
  end
end
for i = 1, ni, 1000 do
  redis.call('LPUSH', KEYS[1], unpack(items, i, math.min(i + 999, ni)))
end
lh_save(t)
return ni
