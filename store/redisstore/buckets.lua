-- buckets.lua: put before the scripts that read or write a bucketed table
-- (the host records, a run's emitted set); it defines the helpers they share.
--
-- A bucketed table spreads its members over many small keys, so that Redis
-- keeps each one in its compact encoding (a listpack for a hash, an intset
-- for a set of integers: a few bytes a member, where one big hash or set
-- costs some 60). It grows by linear hashing: bucket keys are
-- "<base>#<i>", and the meta hash "<base>#meta" holds l, p and n. A member
-- whose hash is x lives in bucket x mod 2^l, or x mod 2^(l+1) when that is
-- below p. Once n is over load times the bucket count (2^l + p), bucket p
-- splits: its members whose x mod 2^(l+1) is not p move to bucket p + 2^l,
-- and p moves on (at 2^l, l grows by one and p is 0 again). A split moves
-- one bucket's members (a few hundred at most), in the script call that
-- added the member that tipped it, so no call ever rehashes the table.
-- Members only ever move to a higher bucket, so a scan by bucket number
-- meets each member at least once however the table splits meanwhile.
--
-- A member of the host table is a host name and its record (see
-- hosts.go). Hash entries longer than 64 bytes would turn a whole bucket
-- into a plain hash, so a host whose name or record is longer lives in
-- "<base>#long", one plain hash for the rare few.

-- lh_hash(s) is a hash of s in [0, 2^32): the first 32 bits of its SHA-1,
-- as Go's hostHash computes it. Callers that write hosts pass that from
-- the client (a SHA-1 in Lua costs about as much as the write it places),
-- so here it is left to splits and the rarer scripts.
local sha1hex, sub, format = redis.sha1hex, string.sub, string.format
local function lh_hash(s)
  return tonumber(sub(sha1hex(s), 1, 8), 16)
end

-- lh_unpacked is the i-th hash (from 1) packed in s, 4 bytes big-endian
-- each: how the client sends the lh_hash of the hosts a call writes.
local byte = string.byte
local function lh_unpacked(s, i)
  local a, b, c, d = byte(s, 4 * i - 3, 4 * i)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

-- lh_open reads the meta of the table at base; kind is 'hash' or 'set',
-- load the mean members a bucket holds before one splits.
-- One HLEN tells whether the long hash exists (Redis deletes a hash when
-- its last entry goes) and fails on a wrong type, before any write.
local function lh_open(base, kind, load)
  local m = redis.call('HMGET', base .. '#meta', 'l', 'p', 'n')
  local n = tonumber(m[3]) or 0
  local keyf = base -- string.format of a bucket's key
  if string.find(base, '%', 1, true) then
    keyf = string.gsub(base, '%%', '%%%%')
  end
  local t = {
    base = base, kind = kind, long = base .. '#long', load = load,
    l = tonumber(m[1]) or 0, p = tonumber(m[2]) or 0, n = n, n0 = n,
    haslong = kind == 'hash' and redis.call('HLEN', base .. '#long') > 0,
    keyf = keyf .. '#%d',
  }
  t.size = 2 ^ t.l
  t.limit = load * (t.size + t.p)
  return t
end

-- lh_buckets is the number of buckets of t.
local function lh_buckets(t)
  return t.size + t.p
end

-- lh_bucket is the key of bucket i of t: one string.format, where
-- concatenating a formatted number would make two strings (most calls
-- meet each bucket once, so keeping the keys of a call saved nothing).
local function lh_bucket(t, i)
  return format(t.keyf, i)
end

-- lh_key is the key of the bucket a member with hash x lives in (the
-- hot path of every write: lh_bucket is written out here).
local function lh_key(t, x)
  local size = t.size
  local i = x % size
  if i < t.p then
    i = x % (2 * size)
  end
  return format(t.keyf, i)
end

-- lh_movebit tells, for the split of bucket t.p, which character of a
-- member's sha1hex holds bit l of its lh_hash, and which hex digits have
-- that bit set. A member of bucket p has x mod 2^l = p, so it moves to p +
-- 2^l exactly when bit l of x is set: testing one character of the SHA-1
-- spares the split a substring and a number for each member it rehashes
-- (it hashes every member of the bucket: the most of its cost). They are
-- kept in t for its level, for the splits of a call that grows the table.
local function lh_movebit(t)
  if t.movel == t.l then
    return t.movepos, t.movehigh
  end
  local pos, w, high = 8 - math.floor(t.l / 4), 2 ^ (t.l % 4), {}
  if pos >= 1 then -- beyond bit 31, x (under 2^32) has no bit set
    for v = 0, 15 do
      local set = v % (2 * w) >= w
      high[string.byte(string.format('%x', v))] = set
      high[string.byte(string.format('%X', v))] = set
    end
  end
  t.movel, t.movepos, t.movehigh = t.l, pos, high
  return pos, high
end

-- lh_split moves the members of bucket t.p that belong to its new sibling.
local function lh_split(t)
  local from, to = lh_bucket(t, t.p), lh_bucket(t, t.p + 2 ^ t.l)
  local pos, high = lh_movebit(t)
  local move, gone, nm = {}, {}, 0
  local all
  if t.kind == 'hash' then
    all = redis.call('HGETALL', from)
    for i = 1, #all, 2 do
      local m = all[i]
      if high[byte(sha1hex(m), pos)] then
        nm = nm + 1
        move[2 * nm - 1], move[2 * nm], gone[nm] = m, all[i + 1], m
      end
    end
    for i = 1, nm, 500 do
      local j = math.min(i + 499, nm)
      redis.call('HSET', to, unpack(move, 2 * i - 1, 2 * j))
      redis.call('HDEL', from, unpack(gone, i, j))
    end
  else
    all = redis.call('SMEMBERS', from)
    for _, m in ipairs(all) do
      if high[byte(sha1hex(m), pos)] then
        nm = nm + 1
        gone[nm] = m
      end
    end
    for i = 1, nm, 500 do
      local j = math.min(i + 499, nm)
      redis.call('SADD', to, unpack(gone, i, j))
      redis.call('SREM', from, unpack(gone, i, j))
    end
  end
  -- A bucket that once outgrew its compact encoding keeps the plain one
  -- until it is written anew. (An empty bucket is no key.)
  if #all > 0 and redis.call('OBJECT', 'ENCODING', from) == 'hashtable' and
      redis.call(t.kind == 'hash' and 'HLEN' or 'SCARD', from) <= t.load then
    local kept = redis.call(t.kind == 'hash' and 'HGETALL' or 'SMEMBERS', from)
    redis.call('DEL', from)
    for i = 1, #kept, 500 do
      redis.call(t.kind == 'hash' and 'HSET' or 'SADD', from, unpack(kept, i, math.min(i + 499, #kept)))
    end
  end
  t.p = t.p + 1
  if t.p == t.size then
    t.l, t.p, t.size = t.l + 1, 0, 2 * t.size
  end
  t.limit = t.load * lh_buckets(t)
end

-- lh_added counts d members more in t, and splits buckets while t holds
-- more than its load a bucket (t.limit members: kept with the geometry,
-- as each new host asks).
local function lh_added(t, d)
  local n = t.n + d
  t.n = n
  while n > t.limit do
    lh_split(t)
  end
end

-- lh_save writes the meta of t back when its count changed.
local function lh_save(t)
  if t.n ~= t.n0 then
    redis.call('HSET', t.base .. '#meta', 'l', string.format('%d', t.l), 'p', string.format('%d', t.p),
      'n', string.format('%d', t.n))
  end
end

-- rec_get returns host h's record in the host table t, or nil; x is
-- lh_hash(h) when the caller has it already.
local function rec_get(t, h, x)
  local v = redis.call('HGET', lh_key(t, x or lh_hash(h)), h)
  if not v and t.haslong then
    v = redis.call('HGET', t.long, h)
  end
  return v
end

-- rec_put sets host h's record to v in the host table t; x as rec_get's.
local function rec_put(t, h, v, x)
  local home = lh_key(t, x or lh_hash(h))
  local to, other = home, t.long
  if #h > 64 or #v > 64 then
    to, other = t.long, home
  end
  local removed = 0
  if other ~= t.long or t.haslong then
    removed = redis.call('HDEL', other, h)
  end
  if to == t.long then
    t.haslong = true
  end
  lh_added(t, redis.call('HSET', to, h, v) - removed)
end

-- rec_add gives host h, whose hash is x, the record v unless it has one
-- already, and reports whether it did: one write for a new host, where
-- rec_get then rec_put would read its bucket twice. home, when given, is
-- the key of h's bucket, lh_key(t, x), which x may then be nil for.
local function rec_add(t, h, v, x, home)
  if #h > 64 or #v > 64 then
    if rec_get(t, h, x) then
      return false
    end
    rec_put(t, h, v, x)
    return true
  end
  if not home then
    local size = t.size -- lh_key(t, x), written out
    local i = x % size
    if i < t.p then
      i = x % (2 * size)
    end
    home = format(t.keyf, i)
  end
  if redis.call('HSETNX', home, h, v) == 0 then
    return false
  end
  -- A short name with a long record lives in the long hash.
  if t.haslong and redis.call('HEXISTS', t.long, h) == 1 then
    redis.call('HDEL', home, h)
    return false
  end
  local n = t.n + 1 -- lh_added(t, 1), its split check written out
  t.n = n
  if n > t.limit then
    lh_added(t, 0)
  end
  return true
end

-- Mean members a bucket holds before it splits: a bucket not yet split
-- holds up to twice that, under the 128 entries of a listpack hash and the
-- 512 of an intset (Redis's defaults), with room for chance.
local host_load, emit_load = 40, 160

-- hosts_open opens the host table whose meta key is meta ("<base>#meta").
local function hosts_open(meta)
  return lh_open(string.sub(meta, 1, -6), 'hash', host_load)
end

-- emit_open opens the emitted table whose meta key is meta.
local function emit_open(meta)
  return lh_open(string.sub(meta, 1, -6), 'set', emit_load)
end
