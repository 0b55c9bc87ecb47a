-- stats.lua: sizes of the collections and the oldest lease's start.
-- (prelude.lua is put before this script: it defines clock and counter_ok.)
--
-- KEYS[1] pending list   KEYS[2] legacy processing list   KEYS[3] dead list
-- KEYS[4] meta of the host table   KEYS[5] leases zset
-- ARGV[1] now, Unix ms, or "" for the server's clock
--
-- Returns {pending, processing (leases + legacy items), dead, hosts with a
-- record (seen), now,
-- start of the oldest lease in ms or -1}. Lease starts are read from the
-- members ("<seq>-<start ms> <item bytes>") of the 1,000 leases closest to
-- their deadline, so Stats stays cheap with many leases in flight; a lease
-- extended past 1,000 others may be missed.
local now = clock(ARGV[1])
local oldest = -1
for _, member in ipairs(redis.call('ZRANGE', KEYS[5], 0, 999)) do
  local start = tonumber(string.match(member, '^%d+%-(%d+) '))
  if start and (oldest < 0 or start < oldest) then
    oldest = start
  end
end
return {
  redis.call('LLEN', KEYS[1]),
  redis.call('ZCARD', KEYS[5]) + redis.call('LLEN', KEYS[2]),
  redis.call('LLEN', KEYS[3]),
  tonumber(redis.call('HGET', KEYS[4], 'n') or '0'),
  now,
  oldest,
}
