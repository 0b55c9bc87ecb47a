-- retrydead.lua: move dead entries back to pending.
-- (buckets.lua is put before this script: it defines the host table.)
--
-- KEYS[1] dead list   KEYS[2] pending list   KEYS[3] meta of the host table
-- ARGV: triples (dead entry bytes, item bytes to push to pending, the
-- item's host or "" when the bytes are no item)
--
-- Each entry is removed once (LREM from the head, where the oldest are) and
-- its item pushed to the back of the line, its host's record set to "q"
-- (queued); entries another caller moved meanwhile are skipped. Returns how
-- many moved.
redis.call('LLEN', KEYS[2]) -- a wrong type fails here, before any write
redis.call('HLEN', KEYS[3])
local t = hosts_open(KEYS[3])
local n = 0
for i = 1, #ARGV, 3 do
  if redis.call('LREM', KEYS[1], 1, ARGV[i]) == 1 then
    redis.call('LPUSH', KEYS[2], ARGV[i + 1])
    if ARGV[i + 2] ~= '' then
      rec_put(t, ARGV[i + 2], 'q')
    end
    n = n + 1
  end
end
lh_save(t)
return n
