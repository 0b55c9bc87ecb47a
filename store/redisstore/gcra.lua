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
local changed = false
if v then
  local s, i, b = string.match(v, '^(%S+) (%S+) (%S+)$')
  s, i, b = tonumber(s), tonumber(i), tonumber(b)
  if s and i and b and s > now then
    tat = s
    if i ~= interval or b ~= burst then
      -- The rate changed: carry the tokens the key has now over to the
      -- new settings, and store that even if the request must wait, so the
      -- change applies to busy keys from their next request on.
      changed = true
      local tokens = b - (s - now) / i
      tat = now
      if tokens < burst then
        tat = now + (burst - tokens) * interval
      end
    end
  end
end

local function store(at)
  redis.call('SET', KEYS[1], string.format('%.17g %.17g %d', at, interval, burst),
    'PX', math.ceil((at - now) / 1000))
end

local allow_at = tat - (burst - 1) * interval
if now < allow_at then
  if changed then store(tat) end
  return {0, math.ceil(allow_at - now)}
end
store(tat + interval)
return {1, 0}
