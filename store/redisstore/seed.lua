-- seed.lua: add hosts not seen before to pending.
-- (buckets.lua is put before this script: it defines the host table.)
--
-- KEYS[1] pending list   KEYS[2] meta of the host table ("<base>#meta")
-- ARGV[1] ts, Unix seconds   ARGV[2] the N hosts' hashes, packed (lh_unpacked)
-- ARGV[3] the number of buckets the client took the table to have, or ""
-- ARGV[4..3+N] normalised hosts (N at most 1,000)
-- ARGV[4+N..3+2N] with ARGV[3] set: the key of each host's bucket
--
-- Hosts without a record (and not repeated earlier in ARGV) get the record
-- "q" (queued) and are pushed to pending, in order, as the item JSON of the
-- older spyder's list protocol {"host":"a.com","ts":1705312200,"attempt":0}
-- (normalised hosts need no escaping). Returns {pushed, the table's
-- buckets, its members}: what the client needs to send the keys next time.
--
-- A short host is one HSETNX into its bucket, which tells whether it was
-- new (rec_add). The client computes the key of that bucket when it knows
-- the table's geometry (sparing the script a number-to-string conversion
-- a host); the keys are used only while the table has the bucket count
-- they were computed for: not when another writer split it since, and not
-- after a split in this call.
redis.call('LLEN', KEYS[1]) -- a wrong type fails here, before any write
local t = hosts_open(KEYS[2])
local ts, xs = ARGV[1], ARGV[2]
local nh = #xs / 4
local limit = t.limit -- changes with every split
local keyed = #ARGV == 3 + 2 * nh and ARGV[3] == string.format('%d', lh_buckets(t))
local items, ni = {}, 0
for i = 1, nh do
  local h, x, home = ARGV[3 + i], nil, nil
  if keyed and t.limit == limit then
    home = ARGV[3 + nh + i]
  else
    x = lh_unpacked(xs, i)
  end
  if rec_add(t, h, 'q', x, home) then
    ni = ni + 1
    items[ni] = '{"host":"' .. h .. '","ts":' .. ts .. ',"attempt":0}'
  end
end
for i = 1, ni, 1000 do
  redis.call('LPUSH', KEYS[1], unpack(items, i, math.min(i + 999, ni)))
end
lh_save(t)
return {ni, lh_buckets(t), t.n}
