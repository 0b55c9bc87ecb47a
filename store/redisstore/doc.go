// Package redisstore is the Redis backend of spyder: the work queue a fleet
// of probes shares ([Store], a [queue.Queue]), the fleet-wide rate limiter,
// and the other state a probe keeps in Redis. [NewClient] turns the
// --redis flag into a client; [Open] opens the queue in it.
//
// The older spyder kept its queue in Redis with what this package calls the
// list protocol: an item is JSON, {"host":"a.com","ts":1705312200,"attempt":0},
// LPUSHed onto the list spyder:queue; a worker takes one with BRPOPLPUSH,
// which moves it into the list spyder:queue:processing, and acknowledges it
// with LREM on that list. [Store] keeps that protocol's pending list and
// item JSON, but holds items in flight in a sorted set instead of the
// processing list (see the sections below).
//
// # Keys
//
// Every key is the base (--queue-key, default "spyder:queue") plus a
// suffix, so a hash tag in the base ("{spyder}:queue") puts them all in one
// Redis Cluster slot, which the Lua scripts need; [Open] refuses a cluster
// client and a base without one (a [Sharded] queue gives each shard's base
// its own tag, below). With the default base:
//
//	spyder:queue                       list    pending items: LPUSH in, RPOP oldest
//	spyder:queue:leases                zset    in flight: "<lease ID> <item>" → deadline (Unix ms)
//	spyder:queue:dead                  list    dead entries, oldest first (RPUSH)
//	spyder:queue:hosts#<i>             hash    bucket i of the host table: host → "q" (queued),
//	                                           "<Unix s> <outcome>" (done: its last probe) or "d" (dead)
//	spyder:queue:hosts#meta            hash    the host table's l, p (its bucket count is 2^l + p) and n (hosts)
//	spyder:queue:hosts#long            hash    the records of hosts whose name or record is over 64 bytes
//	spyder:queue:emitted:<run>#<i>     set     bucket i of run's output seen set: 8-byte key prints (intset)
//	spyder:queue:emitted:<run>#meta    hash    that table's l, p and n
//	spyder:queue:emitting:<run>        hash    key print → "<owner> <deadline ms>": claims of keys being written
//	spyder:queue:processing            list    in flight under the list protocol (read only)
//	spyder:queue:processing-noticed    hash    list-protocol in-flight item → when Reclaim first saw it
//	spyder:queue:lease-seq             string  counter lease IDs are drawn from
//	spyder:queue:replies:<store>       hash    recent script outcomes of one Store (see below)
//	spyder:queue:probes                hash    probe ID → its last heartbeat (JSON); expires with the last beat
//	spyder:queue:probes-expiry         zset    probe ID → when its last heartbeat expires (Unix ms)
//
// The host table and the runs' output seen sets are bucketed tables
// (buckets.lua): many small hashes or sets, which Redis keeps in their
// compact encodings (listpack, intset) at a few bytes a member, grown one
// bucket split at a time by linear hashing as they fill, so that a crawl
// of 100,000 hosts and one of hundreds of millions both keep every bucket
// small. Seeding many hosts makes room for them first ([Store.Grow]): an
// empty host table takes its final bucket count at once, and the hosts
// split no bucket as they come. A finished crawl of 100,000 hosts of the simulated internet kept
// 42 bytes a host in the host table and 22 in the output seen set (8 bytes
// a key, buckets included); `spyder queue drop-run RUN`
// deletes a finished run's set. A queue written by a spyder before the
// host table (with spyder:queue:seen and spyder:queue:probed) is refused
// by [Open], which says how to move it: export with that spyder, import
// with this one.
//
// Items are the list protocol's JSON, stored as they came (unknown fields
// included). A dead entry is
// {"item":{...},"error":"why","at":<Unix s>}, or "raw" (a JSON string) or
// "raw_b64" in place of "item" for bytes that are not an item.
//
// # Sharded keys (Redis Cluster)
//
// [Dial] splits the queue into shards on a Redis Cluster (or on one server
// when asked): a [Sharded] of N [Store]s. Shard i of base B is the Store
// under the base "{B/i-j}", whose braces make it the hash tag of all the
// shard's keys: "{spyder:queue/0-53}", "{spyder:queue/0-53}:leases" and so
// on, as above. j is the first number that puts the tag's slot into the
// i-th of N equal runs of the 16384 slots, so the shards spread over the
// masters of a cluster whose slots were handed out in equal runs. The key
// B:shards holds N; [Dial] refuses a count that disagrees with it. A host
// lives in the shard of its registrable domain (FNV-1a of eTLD+1); lease
// IDs a Sharded hands out end in "@<shard>". The heartbeats and the spool
// are shard 0's; the output seen sets are each shard's, a key going to the
// shard an FNV-1a hash of it picks; the fleet limiter keeps B:rl:<key>,
// without a tag. With one shard on one server, [Dial] opens the Store under
// B itself: the keys above, unchanged.
//
// # Reading the queue with redis-cli
//
//	redis-cli LLEN spyder:queue                                 # pending
//	redis-cli ZCARD spyder:queue:leases                         # in flight
//	redis-cli ZRANGE spyder:queue:leases 0 9 WITHSCORES         # ten leases closest to expiry
//	redis-cli ZRANGEBYSCORE spyder:queue:leases -inf $(( $(date +%s) * 1000 ))  # expired, not yet reclaimed
//	redis-cli LRANGE spyder:queue:dead 0 9                      # ten oldest dead items
//	redis-cli HGET spyder:queue:hosts#meta n                    # hosts ever seeded
//	spyder queue stats                                          # the same, and a host's record is in
//	                                                            # the bucket its name's SHA-1 picks (see buckets.lua)
//
// A lease ID is "<seq>-<lease start, Unix ms>"; the score is the deadline.
// spyder queue stats shows the same numbers.
//
// # Why a sorted set, not the processing list
//
// The list protocol moves an item to {base}:processing with BRPOPLPUSH
// and acks with LREM, which scans that list: with hundreds of items in flight
// each ack costs the server a scan, and each item costs two round trips.
// Here a lease is one member of a sorted set scored by its deadline: an ack
// is a ZREM (O(log n)), expired leases are a range query, and Lease
// and AckAll calls made at the same time in a probe share one script call
// (see BenchmarkLeaseAck for the figures against the list protocol in
// the same run). The item bytes are in the member itself, so nothing else
// has to be kept in step.
//
// Compatibility with the list protocol: an item pushed by hand with LPUSH is
// leased like any other, and LLEN {base} still means pending. Items an older
// worker left in {base}:processing have no lease record; Reclaim notes when
// it first sees each one and moves it back to pending (attempt+1) once a
// lease TTL has passed since, unless the older worker acked it (LREM)
// meanwhile. Stats counts them as processing.
//
// # Atomicity, clocks and retries
//
// Every change that touches more than one key is one Lua script (the .lua
// files beside this one, each with its KEYS, ARGV and reply in a header
// comment), run with EVALSHA. Deadlines come from the Redis server's clock
// (TIME in the script), so the clocks of the probes do not matter; tests
// pass [Options].Now to move time by hand. Dead entries' "at" and seeded
// items' "ts" use the probe's clock: they are for reading, not deciding.
//
// Redis does not undo a script's writes when a later command in it fails,
// so every script that writes first reads each key it will write: a key of
// another type (another program used the name) or a lease counter that is
// not an integer fails the call before it changes anything, and the error
// names the key. What spyder never writes inside its keys does not stop the
// queue: undecodable items go to dead (with their bytes and the reason)
// when leased or reclaimed, a leases member without the space after its ID
// or with a deadline more than ten years ahead is reclaimed like an expired
// one, a dead entry that is not one is listed whole, and a spool entry
// without its "b" field is passed over.
//
// go-redis retries a command whose connection broke, even if the server had
// run it. The lease/ack and finish scripts take a token that rises with each
// call of a [Store] and keep their outcome under it for a while, so a retry
// is answered with the first outcome instead of leasing twice or reporting a
// lease it had just acked as lost.
//
// Requires Redis 6.2 or newer (RPOP with a count, ZMSCORE, COPY).
// An ACL user needs its keys (~spyder:queue*) and +@read +@write +@scripting
// +time; INFO (for the version check in [Open]) is optional.
package redisstore
