-- retrydead.lua: move dead entries back to pending.
--
-- KEYS[1] dead list   KEYS[2] pending list
-- ARGV: pairs (dead entry bytes, item bytes to push to pending)
--
-- Each entry is removed once (LREM from the head, where the oldest are) and
-- its item pushed to the back of the line; entries another caller moved
-- meanwhile are skipped. Returns how many moved.
redis.call('LLEN', KEYS[2]) -- a wrong type fails here, before any write
local n = 0
for i = 1, #ARGV, 2 do
  if redis.call('LREM', KEYS[1], 1, ARGV[i]) == 1 then
    redis.call('LPUSH', KEYS[2], ARGV[i + 1])
    n = n + 1
  end
end
return n
