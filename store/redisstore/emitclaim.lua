-- emitclaim.lua: check output keys against a run's emitted table and claim
-- the new ones, all or none.
-- (buckets.lua is put before this script: it defines the bucketed tables.)
--
-- KEYS[1] meta of the run's emitted table   KEYS[2] claims hash of the run
-- ARGV[1] owner (no spaces)   ARGV[2] claim TTL ms
-- ARGV[3] "1" to take over claims of other owners too, else "0"
-- ARGV[4..] key fingerprints (signed 64-bit integers, in decimal)
--
-- Returns one integer per fingerprint: 1 already emitted, 0 new (claimed
-- by owner until marked or the TTL passes), 2 claimed by another owner
-- whose claim has not expired. When any is 2, nothing was claimed.
local t = emit_open(KEYS[1])
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local out, busy, fresh = {}, false, false
for i = 4, #ARGV do
  local r = 0
  if redis.call('SISMEMBER', lh_key(t, lh_hash(ARGV[i])), ARGV[i]) == 1 then
    r = 1
  elseif ARGV[3] ~= '1' then
    local c = redis.call('HGET', KEYS[2], ARGV[i])
    if c then
      local sp = string.find(c, ' ', 1, true)
      if string.sub(c, 1, sp - 1) ~= ARGV[1] and tonumber(string.sub(c, sp + 1)) > now then
        r, busy = 2, true
      end
    end
  end
  if r == 0 then
    fresh = true
  end
  out[#out + 1] = r
end
if busy or not fresh then
  return out
end
local claim = ARGV[1] .. ' ' .. (now + tonumber(ARGV[2]))
for i = 4, #ARGV do
  if out[i - 3] == 0 then
    redis.call('HSET', KEYS[2], ARGV[i], claim)
  end
end
-- Every claim ends by then, so the hash goes once the fleet stops claiming
-- (the expiry only moves later: other owners may claim for longer).
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return out
