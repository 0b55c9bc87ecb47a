-- seed.lua: add hosts not seen before to pending.
--
-- KEYS[1] pending list   KEYS[2] seen set
-- ARGV[1] ts, Unix seconds   ARGV[2..] normalised hosts (at most 5,000)
--
-- Hosts not in the seen set (and not repeated earlier in ARGV) are added to
-- it and pushed to pending, in order, as the item JSON of the older spyder's list protocol
-- {"host":"a.com","ts":1705312200,"attempt":0} (normalised hosts need no
-- escaping). Returns how many were pushed.
redis.call('LLEN', KEYS[1]) -- a wrong type fails here, before any write
local ts = ARGV[1]
local known = redis.call('SMISMEMBER', KEYS[2], unpack(ARGV, 2))
local fresh, hosts, items = {}, {}, {}
for i = 2, #ARGV do
  local h = ARGV[i]
  if known[i - 1] == 0 and not fresh[h] then
    fresh[h] = true
    hosts[#hosts + 1] = h
    items[#items + 1] = '{"host":"' .. h .. '","ts":' .. ts .. ',"attempt":0}'
  end
end
for i = 1, #hosts, 1000 do
  local j = math.min(i + 999, #hosts)
  redis.call('SADD', KEYS[2], unpack(hosts, i, j))
  redis.call('LPUSH', KEYS[1], unpack(items, i, j))
end
return #hosts
