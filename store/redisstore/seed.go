package redisstore

import (
	"context"
	_ "embed"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// seedChunk is how many hosts one seed script call takes: a script holds
// Redis for its whole run, and each host costs it a write to the host table
// (and its share of the splits), so a chunk is a thousand, a few
// milliseconds.
const seedChunk = 1000

//go:embed seed.lua
var seedLua string

var seedScript = redis.NewScript(bucketsLua + seedLua)

// tableGeo is what a seed call reports of the host table: its buckets and
// members.
type tableGeo struct{ buckets, n int64 }

// Seed implements [queue.Queue]: one script call per chunk of 1,000
// hosts, with their hashes (appendHostHash), dedups against the host table
// and pushes the new ones. Items carry the client's clock as ts. When ctx
// ends between chunks the chunks already stored stay stored and are
// counted in the result returned with the error.
//
// When more hosts follow the first chunk, the share of new ones in it
// tells how many of the rest will be new, and the table makes room for
// them at once ([Store.Grow]), so that they split no bucket; seeding a list
// again, all duplicates, grows nothing.
func (s *Store) Seed(ctx context.Context, hosts []host.Name) (queue.SeedResult, error) {
	var res queue.SeedResult
	if err := s.check(ctx); err != nil {
		return res, err
	}
	ts := strconv.FormatInt(s.wallNow().Unix(), 10)
	args := make([]any, 0, 2*seedChunk+3)
	xs := make([]byte, 0, 4*seedChunk)
	for first := 0; first < len(hosts); first += seedChunk {
		part := hosts[first:min(first+seedChunk, len(hosts))]
		args, xs = s.seedArgs(args[:0], xs[:0], ts, part)
		v, err := s.seedRun(ctx, []string{s.k.pending, s.k.hostsMeta}, args...)
		if err != nil {
			return res, err
		}
		r, _ := v.([]any)
		if len(r) != 3 {
			return res, fmt.Errorf("seed: script replied %v, want 3 numbers", v)
		}
		added := int(toInt64(r[0]))
		s.geo.Store(&tableGeo{buckets: toInt64(r[1]), n: toInt64(r[2])})
		res.Added += added
		res.Duplicate += len(part) - added
		if rest := len(hosts) - len(part); first == 0 && rest > 0 {
			if err := s.Grow(ctx, rest*added/len(part)); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// seedArgs appends to args the ARGV of seed.lua for hosts: ts, their
// hashes (packed into xs), and, when the last seed call left a table that
// cannot split while these are added (all of them new), the bucket count
// and each host's bucket key.
func (s *Store) seedArgs(args []any, xs []byte, ts string, hosts []host.Name) ([]any, []byte) {
	for _, h := range hosts {
		xs = appendHostHash(xs, string(h))
	}
	g := s.geo.Load()
	keyed := g != nil && g.n+int64(len(hosts)) <= hostLoad*g.buckets
	nb := ""
	if keyed {
		nb = strconv.FormatInt(g.buckets, 10)
	}
	args = append(args, ts, xs, nb)
	for _, h := range hosts {
		args = append(args, string(h))
	}
	if keyed {
		for i := range hosts {
			args = append(args, bucketKey(s.k.hosts, homeBucket(binary.BigEndian.Uint32(xs[4*i:]), g.buckets)))
		}
	}
	return args, xs
}
