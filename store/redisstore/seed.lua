-- seed.lua: add hosts not seen before to pending.
--
-- KEYS[1] pending list   KEYS[2] seen set
-- ARGV[1] ts, Unix seconds   ARGV[2..] normalised hosts
--
-- Each host is added to the seen set; those that were not in it yet are
-- pushed to pending, in order, as the original protocol's item JSON
-- {"host":"a.com","ts":1705312200,"attempt":0} (normalised hosts need no
-- escaping). Returns how many were pushed.
local ts = ARGV[1]
local items, added = {}, 0
for i = 2, #ARGV do
  local h = ARGV[i]
  if redis.call('SADD', KEYS[2], h) == 1 then
    items[#items + 1] = '{"host":"' .. h .. '","ts":' .. ts .. ',"attempt":0}'
    if #items == 1000 then
      redis.call('LPUSH', KEYS[1], unpack(items))
      added = added + #items
      items = {}
    end
  end
end
if #items > 0 then
  redis.call('LPUSH', KEYS[1], unpack(items))
  added = added + #items
end
return added
