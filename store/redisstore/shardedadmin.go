package redisstore

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// Dead implements [queue.Admin]: the dead items of every shard, oldest
// first by when they died.
func (s *Sharded) Dead(ctx context.Context, limit int) ([]queue.DeadItem, error) {
	per := make([][]queue.DeadItem, len(s.shards))
	err := s.each(ctx, func(i int, st *Store) error {
		var err error
		per[i], err = st.Dead(ctx, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	all := slices.Concat(per...)
	slices.SortStableFunc(all, func(a, b queue.DeadItem) int { return int(a.At - b.At) })
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}

// RetryDead implements [queue.Admin]: with a limit, shard after shard until
// it is reached; without, every shard.
func (s *Sharded) RetryDead(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return s.sum(ctx, func(_ int, st *Store) (int, error) { return st.RetryDead(ctx, 0) })
	}
	total := 0
	for i, st := range s.shards {
		if total >= limit {
			break
		}
		n, err := st.RetryDead(ctx, limit-total)
		total += n
		if n > 0 {
			s.notEmpty(i)
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// PurgeDead implements [queue.Admin] in every shard.
func (s *Sharded) PurgeDead(ctx context.Context) (int, error) {
	return s.sum(ctx, func(_ int, st *Store) (int, error) { return st.PurgeDead(ctx) })
}

// Requeue implements [queue.Admin] in every shard.
func (s *Sharded) Requeue(ctx context.Context, sel queue.Selector) (int, error) {
	return s.sum(ctx, func(_ int, st *Store) (int, error) { return st.Requeue(ctx, sel) })
}

// sum calls fn in every shard and adds up what it counts; a shard that
// counted any may have items to lease again.
func (s *Sharded) sum(ctx context.Context, fn func(i int, st *Store) (int, error)) (int, error) {
	var total atomic.Int64
	err := s.each(ctx, func(i int, st *Store) error {
		n, err := fn(i, st)
		total.Add(int64(n))
		if n > 0 {
			s.notEmpty(i)
		}
		return err
	})
	return int(total.Load()), err
}

// Dump implements [queue.Admin]: it snapshots every shard first, then
// hands out the pending records of every shard, the processing, the dead
// and the seen, each kind shard after shard. Pending order is each
// shard's own.
func (s *Sharded) Dump(ctx context.Context, fn func(queue.Record) error) error {
	snaps := make([]keys, len(s.shards))
	nows := make([]time.Time, len(s.shards))
	drops := make([]func(), len(s.shards))
	defer func() {
		for _, drop := range drops {
			if drop != nil {
				drop()
			}
		}
	}()
	err := s.each(ctx, func(i int, st *Store) (err error) {
		snaps[i], nows[i], drops[i], err = st.snapshot(ctx)
		return err
	})
	if err != nil {
		return err
	}
	phases := []func(st *Store, i int) error{
		func(st *Store, i int) error { return st.dumpPending(ctx, snaps[i], fn) },
		func(st *Store, i int) error {
			return st.dumpProcessing(ctx, snaps[i], nows[i], func(r queue.Record) error {
				if !strings.Contains(r.LeaseID, "@") { // else loaded whole from another shard count
					r.LeaseID = outID(r.LeaseID, i)
				}
				return fn(r)
			})
		},
		func(st *Store, i int) error { return st.dumpDead(ctx, snaps[i], fn) },
		func(st *Store, i int) error { return st.dumpSeen(ctx, snaps[i], fn) },
	}
	for _, phase := range phases {
		for i, st := range s.shards {
			if err := phase(st, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// Load implements [queue.Admin]: each record goes to the shard of its
// host (a record with only raw bytes to shard 0), keeping the order of
// each shard's records. It returns queue.ErrNotEmpty when any shard holds
// state, before writing anything.
func (s *Sharded) Load(ctx context.Context, recs []queue.Record) error {
	err := s.each(ctx, func(_ int, st *Store) error {
		n, err := st.c.Exists(ctx, st.k.state()...).Result()
		if err != nil {
			return interpret("load", err)
		}
		if n > 0 {
			return queue.ErrNotEmpty
		}
		return nil
	})
	if err != nil {
		return err
	}
	g := map[int][]int{}
	for j, i := range s.loadShards(recs) {
		g[i] = append(g[i], j)
	}
	return s.inShards(ctx, g, func(i int, idx []int) error {
		s.notEmpty(i)
		part := pick(recs, idx)
		for k := range part {
			if part[k].Kind == queue.KindProcessing {
				part[k].LeaseID = inID(part[k].LeaseID, i)
			}
		}
		return s.shards[i].Load(ctx, part)
	})
}

// loadShards returns the shard of each record: its host's, or for bytes
// that are not an item the shard of the next item (else the last, else
// shard 0), so that they keep their place among the items around them and
// go to dead when those are leased.
func (s *Sharded) loadShards(recs []queue.Record) []int {
	out := make([]int, len(recs))
	next := -1
	for j := len(recs) - 1; j >= 0; j-- {
		if h := recordHost(recs[j]); h != "" {
			next = s.shardOf(h)
		}
		out[j] = next
	}
	last := 0
	for j := range out {
		if out[j] < 0 {
			out[j] = last
		}
		last = out[j]
	}
	return out
}

// recordHost returns the host a record is about, or "" for bytes that are
// not an item.
func recordHost(r queue.Record) host.Name {
	if r.Item != nil {
		return r.Item.Host
	}
	return r.Host
}
