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
func (s *Store) Seed(ctx context.Context, hosts []host.Name) (queue.SeedResult, error) {
	var res queue.SeedResult
	if err := s.check(ctx); err != nil {
		return res, err
	}
	args := make([]any, 2, seedChunk+2) // ts, the hosts' hashes, then hosts
	args[0] = strconv.FormatInt(s.wallNow().Unix(), 10)
	xs := make([]byte, 0, 4*seedChunk)
	flush := func() error {
		n := len(args) - 2
		if n == 0 {
			return nil
		}
		args[1] = xs
		v, err := s.seedRun(ctx, []string{s.k.pending, s.k.hostsMeta}, args...)
		if err != nil {
			return err
		}
		added := int(toInt64(v))
		res.Added += added
		res.Duplicate += n - added
		args, xs = args[:2], xs[:0]
		return nil
	}
	for _, h := range hosts {
		args = append(args, string(h))
		xs = appendHostHash(xs, string(h))
		if len(args) == seedChunk+2 {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	return res, flush()
}
