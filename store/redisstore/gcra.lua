-- gcra decides one request for one key of the fleet-wide limiter (GCRA: the
-- generic cell rate algorithm, a token bucket kept as one timestamp), on the
-- Redis server's clock so the probes' clocks do not matter.
--
-- KEYS[1]  the key's state: "TAT INTERVAL BURST", where TAT is the theoretical
--          arrival time in microseconds since the epoch (when the bucket is
--          full again) and INTERVAL, BURST the settings it was computed with.
--          It expires once TAT has passed: an idle key takes no memory.
-- ARGV[1]  the emission interval in microseconds (1e6 / requests per second)
-- ARGV[2]  the burst, at least 1
--
-- Returns {1, 0} when the request may go now (and counts it), or
-- {0, RETRY} when it may not, RETRY being the microseconds to wait first.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])

local tat = now
local v = redis.call('GET', KEYS[1])
if v then
  local s, i, b = string.match(v, '^(%S+) (%S+) (%S+)$')
  s, i, b = tonumber(s), tonumber(i), tonumber(b)
  if s and i and b and s > now then
    -- Carry the tokens left over to the current settings, so a rate change
    -- applies to busy keys at once.
    local tokens = b - (s - now) / i
    if tokens < burst then
      tat = now + (burst - tokens) * interval
    end
  end
end

local allow_at = tat - (burst - 1) * interval
if now < allow_at then
  return {0, math.ceil(allow_at - now)}
end
tat = tat + interval
redis.call('SET', KEYS[1], string.format('%.17g %.17g %d', tat, interval, burst),
  'PX', math.ceil((tat - now) / 1000))
return {1, 0}
