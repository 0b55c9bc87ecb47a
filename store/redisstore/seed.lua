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
-- A host is one HSETNX into its bucket, which tells whether it was new.
-- While the table has no long hash and the name is short, that is all
-- rec_add would do, so the loop does it itself, keeping the table's
-- geometry in locals (re-read after a split): a seeded host's share of the
-- script's Lua work is the most of what a call does besides its writes.
-- Any other host goes through rec_add, which also looks in the long hash.
redis.call('LLEN', KEYS[1]) -- a wrong type fails here, before any write
local t = hosts_open(KEYS[2])
local ts, xs = ARGV[1], ARGV[2]
local items, ni = {}, 0
local keyf, size, p = t.keyf, t.size, t.p
local limit = t.load * (size + p) -- the count over which a bucket splits
for i = 3, #ARGV do
  local h = ARGV[i]
  local x = lh_unpacked(xs, i - 2)
  local added
  if #h > 64 or t.haslong then
    added = rec_add(t, h, 'q', x)
    size, p, limit = t.size, t.p, t.load * (t.size + t.p)
  else
    local k = x % size
    if k < p then
      k = x % (2 * size)
    end
    added = redis.call('HSETNX', format(keyf, k), h, 'q') == 1
    if added then
      t.n = t.n + 1
      if t.n > limit then
        lh_added(t, 0)
        size, p, limit = t.size, t.p, t.load * (t.size + t.p)
      end
    end
  end
  if added then
    ni = ni + 1
    items[ni] = '{"host":"' .. h .. '","ts":' .. ts .. ',"attempt":0}'
  end
end
for i = 1, ni, 1000 do
  redis.call('LPUSH', KEYS[1], unpack(items, i, math.min(i + 999, ni)))
end
lh_save(t)
return ni
