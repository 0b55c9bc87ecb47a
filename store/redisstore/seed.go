package redisstore

import (
	"context"
	_ "embed"
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
	args := make([]any, 0, seedChunk+2) // ts, the hosts' hashes, then hosts
	xs := make([]byte, 0, 4*seedChunk)
	for first := 0; first < len(hosts); first += seedChunk {
		part := hosts[first:min(first+seedChunk, len(hosts))]
		args, xs = append(args[:0], ts, nil), xs[:0]
		for _, h := range part {
			args = append(args, string(h))
			xs = appendHostHash(xs, string(h))
		}
		args[1] = xs
		v, err := s.seedRun(ctx, []string{s.k.pending, s.k.hostsMeta}, args...)
		if err != nil {
			return res, err
		}
		added := int(toInt64(v))
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
