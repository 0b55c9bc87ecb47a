-- requeue.lua: move done hosts whose last probe matches back to pending,
-- one HSCAN step at a time.
--
-- KEYS[1] pending list   KEYS[2] probed hash
-- ARGV[1] HSCAN cursor   ARGV[2] HSCAN COUNT
-- ARGV[3] now, Unix seconds (the new items' ts)
-- ARGV[4] before, Unix seconds: pick probes older than this (0: any age)
-- ARGV[5..] outcome patterns (none: any outcome); a pattern ending in "xx"
--           matches an outcome as long, equal up to those two characters
--
-- A picked host's record is deleted and it is pushed to pending as
-- {"host":H,"ts":now,"attempt":0}, in the same step, so a host moves once
-- however many callers scan at the same time. Returns {next cursor, moved}.
redis.call('LLEN', KEYS[1]) -- a wrong type fails here, before any write
local before = tonumber(ARGV[4])
local function picked(v)
  local at, outcome = string.match(v, '^(%-?%d+) (.+)$')
  if not at or (before > 0 and tonumber(at) >= before) then
    return false
  end
  if #ARGV < 5 then
    return true
  end
  for i = 5, #ARGV do
    local pat = ARGV[i]
    if pat == outcome then
      return true
    end
    if #pat == #outcome and string.sub(pat, -2) == 'xx' and
        string.sub(outcome, 1, #pat - 2) == string.sub(pat, 1, #pat - 2) then
      return true
    end
  end
  return false
end
local r = redis.call('HSCAN', KEYS[2], ARGV[1], 'COUNT', ARGV[2])
local kv, moved = r[2], 0
for i = 1, #kv, 2 do
  if picked(kv[i + 1]) then
    redis.call('HDEL', KEYS[2], kv[i])
    redis.call('LPUSH', KEYS[1], '{"host":"' .. kv[i] .. '","ts":' .. ARGV[3] .. ',"attempt":0}')
    moved = moved + 1
  end
end
return {r[1], moved}
