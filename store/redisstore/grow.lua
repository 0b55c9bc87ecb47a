-- grow.lua: make room in the host table for hosts about to be seeded, so
-- that adding them splits no bucket.
-- (buckets.lua is put before this script: it defines the host table.)
--
-- KEYS[1] meta of the host table ("<base>#meta")
-- ARGV[1] hosts to make room for, beyond those the table holds
-- ARGV[2] at most this many buckets to split in this call
--
-- The table is to have ceil((n + ARGV[1]) / load) buckets (at most 2^26),
-- as many as adding that many hosts would have split it into. A table
-- without members takes that geometry at once: its buckets are no keys,
-- so nothing moves. Otherwise buckets split one by one, as adding hosts
-- would split them, at most ARGV[2] in a call. Returns {the buckets still
-- to come (0: the table has room), its buckets, its members}.
local t = hosts_open(KEYS[1])
local want = math.min(math.ceil((t.n + tonumber(ARGV[1])) / t.load), 2 ^ 26)
if want <= lh_buckets(t) then
  return {0, lh_buckets(t), t.n}
end
if t.n == 0 then
  local l = 0
  while 2 ^ (l + 1) <= want do
    l = l + 1
  end
  redis.call('HSET', KEYS[1], 'l', string.format('%d', l), 'p', string.format('%d', want - 2 ^ l), 'n', '0')
  return {0, want, 0}
end
for _ = 1, tonumber(ARGV[2]) do
  if lh_buckets(t) >= want then
    break
  end
  lh_split(t)
end
redis.call('HSET', KEYS[1], 'l', string.format('%d', t.l), 'p', string.format('%d', t.p))
return {want - lh_buckets(t), lh_buckets(t), t.n}
