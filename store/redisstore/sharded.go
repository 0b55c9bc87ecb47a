package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

// Sharded is the Redis [store.Backend] split into shards, so that a Redis
// Cluster spreads one fleet's queue over its masters. Each shard is a
// [Store] under its own hash tag ([shardBase]), so every script touches
// one shard's keys in one slot. A host lives in the shard of its
// registrable domain, and everything about it (its item, lease, dead entry,
// seen mark and last probe) stays there; calls about hosts go to their
// shards, and calls about the whole queue visit every shard and merge. The
// heartbeats and the spool live in shard 0; the fleet limiter's keys have
// no tag, so each spreads on its own.
//
// Pending order is kept within a shard, not across shards. Sharded is safe
// for concurrent use.
type Sharded struct {
	fleet
	shards []*Store

	// offset is this process's first shard for Lease, which moves on
	// every rotateEvery by the clock now; emptyUntil holds, per shard,
	// until when (Unix ns) Lease passes it over because it just found it
	// empty.
	offset     uint64
	now        func() time.Time
	emptyUntil []atomic.Int64

	closeOnce sync.Once
}

var _ store.Backend = (*Sharded)(nil)

// rotateEvery is how long Lease keeps starting at one shard.
const rotateEvery = 20 * time.Millisecond

// emptyMemory is how long Lease passes over a shard it found empty. Items
// seeded or retried into it meanwhile wait at most this long.
const emptyMemory = 250 * time.Millisecond

// openSharded opens the n shards of the queue under base in c (base has
// no hash tag). It checks the server and loads the scripts once.
func openSharded(ctx context.Context, c redis.UniversalClient, base string, n int, o Options) (*Sharded, error) {
	fo := o
	fo.Key = shardBase(base, n, 0)
	first, err := Open(ctx, c, fo)
	if err != nil {
		return nil, err
	}
	s := &Sharded{fleet: fleet{c: c, base: base}, shards: []*Store{first}, emptyUntil: make([]atomic.Int64, n),
		offset: rand.Uint64(), now: o.Now}
	if s.now == nil {
		s.now = time.Now
	}
	for i := 1; i < n; i++ {
		st, err := newStore(c, shardBase(base, n, i), o)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.shards = append(s.shards, st)
	}
	return s, nil
}

// OpenSharded opens the queue under base in c split into n shards, as
// [Dial] does once it knows n, and stores n with it; it refuses a base
// with a hash tag and an n that disagrees with the stored count. The
// caller owns c and closes it after [Sharded.Close].
func OpenSharded(ctx context.Context, c redis.UniversalClient, base string, n int, o Options) (*Sharded, error) {
	if tag := hashTag(base); tag != "" {
		return nil, fmt.Errorf("key %q carries the hash tag {%s}; a sharded queue's base has none (each shard gets its own)", base, tag)
	}
	o.Key, o.Shards = base, max(n, 1)
	b, err := openDialed(ctx, c, 1, o) // as on a cluster: always sharded
	if err != nil {
		return nil, err
	}
	return b.(*Sharded), nil
}

// Shards returns the shards, in shard order. A caller may use them to read
// one shard's keys (Store.Key); the Sharded owns them.
func (s *Sharded) Shards() []*Store { return s.shards }

// Key returns the base key the shards are named from, e.g. "spyder:queue".
func (s *Sharded) Key() string { return s.base }

// Client returns the Redis client the shards use.
func (s *Sharded) Client() redis.UniversalClient { return s.c }

// shardOf returns the shard that holds h.
func (s *Sharded) shardOf(h host.Name) int { return shardOfHost(h, len(s.shards)) }

// Close closes every shard, then the client if [Dial] made it. Closing twice
// is a no-op.
func (s *Sharded) Close() error {
	var err error
	s.closeOnce.Do(func() {
		for _, st := range s.shards {
			st.Close()
		}
		if s.ownsClient {
			err = s.c.Close()
		}
	})
	return err
}

// each calls fn for every shard, a few at a time, and returns the first
// error.
func (s *Sharded) each(ctx context.Context, fn func(i int, st *Store) error) error {
	if err := s.shards[0].check(ctx); err != nil {
		return err
	}
	return parallel(len(s.shards), func(i int) error { return fn(i, s.shards[i]) })
}

// fanout bounds the calls to shards in flight at once.
const fanout = 16

// parallel runs fn(0..n-1), fanout at a time, and returns the first error.
func parallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, fanout)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Emitted returns a new owner of the output seen set, split over the
// shards by a hash of each key (see [ShardedEmitted]).
func (s *Sharded) Emitted() (store.Emitted, error) {
	e := &ShardedEmitted{parts: make([]*Emitted, len(s.shards)), s: s}
	for i, st := range s.shards {
		e.parts[i] = NewEmitted(s.c, st.base)
	}
	return e, nil
}

// Spool returns the spool, kept in shard 0.
func (s *Sharded) Spool() (store.Spool, error) { return NewSpool(s.c, s.shards[0].base), nil }

// Heartbeat keeps a probe's beat in shard 0.
func (s *Sharded) Heartbeat(ctx context.Context, b store.ProbeBeat, ttl time.Duration) error {
	return s.shards[0].Heartbeat(ctx, b, ttl)
}

// Probes lists the beats kept in shard 0.
func (s *Sharded) Probes(ctx context.Context) ([]store.ProbeBeat, error) {
	return s.shards[0].Probes(ctx)
}

var _ queue.Queue = (*Sharded)(nil)
