package redisstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// growSplits is how many buckets one grow script call splits at most: a
// split moves one bucket's members (some 90 µs for a full bucket), so a
// call holds Redis a few milliseconds, as a seed call of a thousand hosts
// does.
const growSplits = 64

//go:embed grow.lua
var growLua string

var growScript = redis.NewScript(bucketsLua + growLua)

// Grow makes room in the host table for more hosts beyond those it holds,
// so that seeding them splits no bucket: a split rehashes every member of
// the bucket it splits, which costs about as much again as adding the
// hosts. An empty table just takes its final size (buckets without members
// are no keys, so room not yet filled costs nothing, and a table that gets
// half the hosts it made room for keeps about 2 bytes more a host); a
// table with members splits its buckets now, as seeding would have, a few
// dozen per script call. A table already that large is left as it is. When ctx ends the
// splits done stay done, and the table is as correct as after any split.
func (s *Store) Grow(ctx context.Context, more int) error {
	for more > 0 {
		v, err := s.run(ctx, "grow", growScript, []string{s.k.hostsMeta}, more, growSplits)
		if err != nil {
			return err
		}
		r, _ := v.([]any)
		if len(r) != 3 {
			return fmt.Errorf("grow: script replied %v, want 3 numbers", v)
		}
		if toInt64(r[0]) == 0 {
			s.geo.Store(&tableGeo{buckets: toInt64(r[1]), n: toInt64(r[2])})
			return nil
		}
	}
	return nil
}

// Grow makes room in the host table of every shard for its share of more
// hosts ([Store.Grow]); a host's shard is the hash of its registrable
// domain, so a list spreads evenly over the shards, and a shard that gets
// more than its share splits buckets for the rest as it seeds.
func (s *Sharded) Grow(ctx context.Context, more int) error {
	share := (more + len(s.shards) - 1) / len(s.shards)
	return s.each(ctx, func(_ int, st *Store) error { return st.Grow(ctx, share) })
}
