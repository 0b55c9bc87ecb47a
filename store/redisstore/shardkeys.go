package redisstore

import (
	"hash/fnv"
	"math/bits"
	"strconv"
	"strings"

	"github.com/spyder-crawler/spyder/host"
)

// clusterSlots is how many hash slots Redis Cluster splits keys into.
const clusterSlots = 16384

// maxShards bounds --shards: more would only add empty polls.
const maxShards = 1024

// shardsKey is the key that holds the shard count of the queue under base,
// as a decimal string. It has no hash tag of its own: one command reads it.
func shardsKey(base string) string { return base + ":shards" }

// shardBase returns the base key of shard i of n under base, e.g.
// "{spyder:queue/3-41}". The braces make the whole name the shard's hash
// tag, so every key of the shard shares one slot and each shard's slot
// differs. The number after the dash is the first that puts the slot in
// the i-th of n equal ranges of the 16384 slots: a cluster made with
// redis-cli gives each master an equal run of slots, so the shards spread
// over the masters as evenly as n allows.
func shardBase(base string, n, i int) string {
	for j := 0; ; j++ {
		tag := base + "/" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
		if int(crc16(tag)%clusterSlots)*n/clusterSlots == i {
			return "{" + tag + "}"
		}
	}
}

// shardOfHost returns the shard of h among n: a hash of its registrable
// domain, so that every host of one site shares a shard.
func shardOfHost(h host.Name, n int) int {
	return shardOfKey(string(h.Apex()), n)
}

// shardOfKey returns the shard of an opaque key among n (FNV-1a).
func shardOfKey(key string, n int) int {
	f := fnv.New64a()
	f.Write([]byte(key))
	return int(f.Sum64() % uint64(n))
}

// defaultShards is the shard count on a cluster of masters masters: 16 a
// master rounded up to a power of two (64 for 3 masters), so the shards
// spread evenly and a master or two added later still gets shards to take.
func defaultShards(masters int) int {
	n := 16 * max(masters, 1)
	return min(1<<bits.Len(uint(n-1)), maxShards)
}

// crc16 is the CRC-16/XMODEM checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// A lease ID a [Sharded] hands out is its shard's ID plus "@" and the shard
// number, since each shard numbers its leases alone. Calls find the shard
// by the lease's host; outID and inID turn one ID into the other there. A
// lease loaded from an export keeps its ID: one whose suffix names the
// shard it lands in is stored without it, any other (from another shard
// count, or from bbolt) whole, and Dump writes an ID that holds an "@" as
// stored, so the lease's holder can still ack it and an export of a
// sharded queue comes back unchanged (an ID from bbolt gains the suffix of
// its shard in the next export; its holder's ack still finds it).

// outID is the ID of shard i's lease id as a Sharded hands it out.
func outID(id string, i int) string { return id + "@" + strconv.Itoa(i) }

// inID is the ID shard i knows the lease id by.
func inID(id string, i int) string {
	if rest, ok := strings.CutSuffix(id, "@"+strconv.Itoa(i)); ok {
		return rest
	}
	return id
}
