-- requeue.lua: move done hosts whose last probe matches back to pending,
-- a few buckets of the host table at a time.
-- (buckets.lua is put before this script: it defines the host table.)
--
-- KEYS[1] pending list   KEYS[2] meta of the host table
-- ARGV[1] cursor: the next bucket to read; the bucket count means the
--         long hash ("<base>#long") is next
-- ARGV[2] read buckets until this many records were read
-- ARGV[3] now, Unix seconds (the new items' ts)
-- ARGV[4] before, Unix seconds: pick probes older than this (0: any age)
-- ARGV[5..] outcome patterns (none: any outcome); a pattern ending in "xx"
--           matches an outcome as long, equal up to those two characters
--
-- A picked host's record becomes "q" and it is pushed to pending as
-- {"host":H,"ts":now,"attempt":0}, in the same step, so a host moves once
-- however many callers scan at the same time; a bucket that splits between
-- steps only moves records to buckets not read yet. Returns {next cursor,
-- or -1 when done; moved}.
redis.call('LLEN', KEYS[1]) -- a wrong type fails here, before any write
local t = hosts_open(KEYS[2])
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
local cursor, want, read, moved = tonumber(ARGV[1]), tonumber(ARGV[2]), 0, 0
local nb = lh_buckets(t)
while cursor >= 0 and read < want do
  local key = t.long
  if cursor < nb then
    key = lh_bucket(t, cursor)
    cursor = cursor + 1
  else
    cursor = -1
  end
  local kv = redis.call('HGETALL', key)
  read = read + #kv / 2
  for i = 1, #kv, 2 do
    if picked(kv[i + 1]) then
      redis.call('HSET', key, kv[i], 'q')
      redis.call('LPUSH', KEYS[1], '{"host":"' .. kv[i] .. '","ts":' .. ARGV[3] .. ',"attempt":0}')
      moved = moved + 1
    end
  end
end
return {cursor, moved}
