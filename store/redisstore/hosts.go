package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/queue"
)

// The host table keeps one record per host the queue ever held, in the
// buckets of a bucketed table (buckets.lua) under {base}:hosts:
//
//	"q"                  queued: seeded, requeued or retried, not done since
//	"<unix s> <outcome>" done: its last probe (queue.Probe.Encode)
//	"d"                  not queued and no probe kept: it went to dead, or
//	                     was imported bare from an export
//
// It replaces the seen set and the probe hash of the layout before it: a
// record is what both said, in one listpack entry of about 40 bytes
// (its bucket's share included) instead of some 140 over two big keys, and a dead host is no longer
// counted as queued. The host name is the field, so `--revisit` and `queue
// retry` find done hosts by scanning the buckets.

// Record values of the host table besides a probe's.
const (
	recQueued = "q"
	recIdle   = "d"
)

// hostLoad is host_load of buckets.lua: the mean records of a bucket.
const hostLoad = 40

// hostHash is lh_hash of buckets.lua, the hash that picks a host's
// bucket: the first 32 bits of the SHA-1 of its name. The client computes
// it for each host it writes and sends them packed in one argument (see
// appendHostHash), so the script, which holds Redis while it runs, neither
// hashes (SHA-1 in Lua costs about what the write it places does) nor
// makes a Lua string for each hash.
func hostHash(h string) uint32 {
	sum := sha1.Sum([]byte(h))
	return binary.BigEndian.Uint32(sum[:4])
}

// appendHostHash appends hostHash(h) to b in 4 bytes, big-endian, as
// lh_unpacked of buckets.lua reads them.
func appendHostHash(b []byte, h string) []byte {
	return binary.BigEndian.AppendUint32(b, hostHash(h))
}

// homeBucket is lh_key of buckets.lua as a bucket number: the bucket a
// member whose hash is x lives in, in a table of nb buckets (2^l + p, p
// below 2^l): x mod 2^l, or x mod 2^(l+1) when that is below p.
func homeBucket(x uint32, nb int64) int64 {
	size := int64(1) << (bits.Len64(uint64(nb)) - 1)
	i := int64(x) % size
	if i < nb-size {
		i = int64(x) % (2 * size)
	}
	return i
}

// bucketKey is the key of bucket i of the table at base.
func bucketKey(base string, i int64) string {
	return base + "#" + strconv.FormatInt(i, 10)
}

// tableBuckets reads how many buckets the table at base has (2^l + p).
func (s *Store) tableBuckets(ctx context.Context, base string) (int64, error) {
	return tableBuckets(ctx, s.c, base)
}

func tableBuckets(ctx context.Context, c redis.UniversalClient, base string) (int64, error) {
	m, err := c.HMGet(ctx, base+"#meta", "l", "p").Result()
	if err != nil {
		return 0, interpret("read "+base+"#meta", err)
	}
	l, _ := strconv.ParseInt(fmt.Sprint(m[0]), 10, 64)
	p, _ := strconv.ParseInt(fmt.Sprint(m[1]), 10, 64)
	if m[0] == nil {
		return 1, nil
	}
	if l < 0 || l > 40 || p < 0 || p >= 1<<l {
		return 0, fmt.Errorf("%s#meta holds l=%v p=%v, which spyder never writes", base, m[0], m[1])
	}
	return 1<<l + p, nil
}

// dropTable deletes the table at base: its buckets, a few hundred keys a
// call, then its long hash and meta. It returns how many buckets it had.
func (s *Store) dropTable(ctx context.Context, base string) (int64, error) {
	return dropTable(ctx, s.c, base)
}

func dropTable(ctx context.Context, c redis.UniversalClient, base string) (int64, error) {
	nb, err := tableBuckets(ctx, c, base)
	if err != nil {
		return 0, err
	}
	for first := int64(0); first < nb; first += 500 {
		var ks []string
		for i := first; i < min(nb, first+500); i++ {
			ks = append(ks, bucketKey(base, i))
		}
		if err := c.Unlink(ctx, ks...).Err(); err != nil {
			return 0, interpret("delete "+base, err)
		}
	}
	if err := c.Unlink(ctx, base+"#long", base+"#meta").Err(); err != nil {
		return 0, interpret("delete "+base, err)
	}
	return nb, nil
}

// hostRecords returns the host table records of an import, as pairs of
// (host, record) for hostput.lua: each seen host's last probe when it has
// one, else "q" when the import holds an item of it pending or in flight,
// else "d". So a host that an older layout kept in its seen set without a
// probe (it went to dead, or was done before probes were kept) is not
// taken for queued. Hosts without a seen record get none, as exported.
func hostRecords(recs []queue.Record) []any {
	queued := queue.QueuedHosts(recs)
	var out []any
	for _, r := range recs {
		if r.Kind != queue.KindSeen {
			continue
		}
		v := recIdle
		switch {
		case r.Outcome != "":
			v = queue.Visit{At: r.At, Outcome: r.Outcome}.Encode()
		case queued[r.Host]:
			v = recQueued
		}
		out = append(out, string(r.Host), v)
	}
	return out
}

// checkLayout refuses a queue kept in the layout before the host table
// (a seen set and a probe hash), which this store does not read.
func checkLayout(ctx context.Context, c redis.UniversalClient, k keys) error {
	n, err := c.Exists(ctx, k.oldSeen, k.oldProbed).Result()
	if err != nil {
		return interpret("open", err)
	}
	if n > 0 {
		return fmt.Errorf("queue %s is in the layout of an older spyder (keys %s and %s): export it with that spyder (spyder queue export > state.jsonl), delete the queue's keys (see docs/guarantees.md, When Redis loses its data), and import the export with this one (spyder queue import state.jsonl)",
			k.pending, k.oldSeen, k.oldProbed)
	}
	return nil
}
