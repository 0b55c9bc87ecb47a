// Package limiter keeps spyder polite: it spaces out the requests a crawl
// sends to each host (or apex domain, or server IP), whatever the number of
// workers, so a crawl of millions of domains never hammers one of them.
//
// # Limiters
//
// [Limiter] is the interface the crawl and the CLI hold. [Local] implements
// it in memory for one process: one token bucket (golang.org/x/time/rate) per
// key, shared by every worker. store/redisstore implements it for a fleet,
// holding the rate across every probe that shares one Redis and falling back
// to a [Local] when Redis cannot be reached.
//
// # Keys
//
// The caller chooses what a key is with a [KeyFunc]: the host ([KeyHost],
// the default), its registrable domain ([KeyApex]), or the address it
// resolved to ([KeyIP]), so that thousands of domains served by one machine
// are not all hit at once.
//
// # Memory
//
// A [Local] tracks at most a fixed number of keys ([DefaultMaxEntries] unless
// [MaxEntries] says otherwise), however many distinct keys it is asked about.
// A key is idle when its bucket has refilled completely; forgetting it then
// changes nothing, because a new bucket starts full too. When a new key
// arrives and the table is full, the key that refilled first is evicted if it
// is idle. If none is idle, the new key is refused ([Local.Allow] reports
// false) or waits ([Local.Wait]) until one is, so that no key is ever
// forgotten while it still owes time and no key can exceed its rate.
// Eviction happens on insert: no goroutine sweeps the table.
//
// To keep workers from queueing on one lock, a large table is split by key
// hash into up to 32 parts, each locked on its own and holding an equal
// share of the bound; "the table is full" then means the new key's part is.
// With the default bound each part holds over 300 keys, so an uneven spread
// costs little. A key is busy from its first request until its bucket has
// refilled, at most burst/rate seconds after its last request (3s with the
// defaults of 1/s and a burst of 3); a crawl sees no refusal as long as
// fewer keys than the bound are busy at once, that is, with the defaults,
// while it starts fewer than about 3,000 new hosts a second.
package limiter
