package redisstore

import "strings"

// keys holds every Redis key of one queue, all derived from its base. Keys
// are the base plus a suffix, so a hash tag in the base ("{spyder}:queue")
// is in every key and Redis Cluster keeps them in one slot, which the Lua
// scripts require.
type keys struct {
	pending     string // list: LPUSH in, RPOP oldest; the pending list of the older spyder's list protocol too (see package doc)
	legacy      string // list: in-flight items of the older spyder's list protocol (see package doc)
	dead        string // list: dead entries, RPUSH in, oldest at index 0
	hosts       string // base of the host table (see hosts.go): "<hosts>#<i>" buckets, "<hosts>#meta", "<hosts>#long"
	hostsMeta   string // hash: the host table's l, p and n (buckets.lua)
	oldSeen     string // set: every host ever seeded, in the layout before the host table (refused by Open)
	leases      string // sorted set: "<lease ID> <item bytes>" → deadline (Unix ms)
	leaseSeq    string // string: counter lease IDs are drawn from
	legacySeen  string // hash: legacy item bytes → when first noticed (Unix ms)
	probes      string // hash: probe ID → its last heartbeat (JSON)
	probeExpiry string // sorted set: probe ID → when its last heartbeat expires (Unix ms)
	oldProbed   string // hash: done host → its last probe, in the layout before the host table
}

func newKeys(base string) keys {
	return keys{
		pending:     base,
		legacy:      base + ":processing",
		dead:        base + ":dead",
		hosts:       base + ":hosts",
		hostsMeta:   base + ":hosts#meta",
		oldSeen:     base + ":seen",
		leases:      base + ":leases",
		leaseSeq:    base + ":lease-seq",
		legacySeen:  base + ":processing-noticed",
		probes:      base + ":probes",
		probeExpiry: base + ":probes-expiry",
		oldProbed:   base + ":probed",
	}
}

// state lists the keys that hold queue state besides the host table's
// buckets (not counters): the ones Dump copies and Load requires absent.
func (k keys) state() []string {
	return []string{k.pending, k.legacy, k.dead, k.leases, k.legacySeen, k.hostsMeta, k.hosts + "#long"}
}

// hashTag returns the part of key Redis Cluster hashes: the text between the
// first "{" and the next "}" when that is not empty, else "".
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return ""
	}
	return key[i+1 : i+1+j]
}
