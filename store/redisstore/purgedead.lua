-- purgedead.lua: delete every dead entry.
--
-- KEYS[1] dead list
--
-- Returns how many entries there were.
local n = redis.call('LLEN', KEYS[1])
redis.call('DEL', KEYS[1])
return n
