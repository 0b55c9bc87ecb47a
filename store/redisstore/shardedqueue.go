package redisstore

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// Seed implements [queue.Worker]: each shard seeds its own hosts, several
// shards at once. On an error the shards that stored theirs are counted.
func (s *Sharded) Seed(ctx context.Context, hosts []host.Name) (queue.SeedResult, error) {
	parts := make([][]host.Name, len(s.shards))
	for _, h := range hosts {
		i := s.shardOf(h)
		parts[i] = append(parts[i], h)
	}
	var mu sync.Mutex
	var res queue.SeedResult
	err := s.each(ctx, func(i int, st *Store) error {
		if len(parts[i]) == 0 {
			return nil
		}
		r, err := st.Seed(ctx, parts[i])
		mu.Lock()
		res.Added += r.Added
		res.Duplicate += r.Duplicate
		mu.Unlock()
		if r.Added > 0 {
			s.notEmpty(i)
		}
		return err
	})
	return res, err
}

// notEmpty makes Lease look at shard i again at once: this process put
// items into it.
func (s *Sharded) notEmpty(i int) { s.emptyUntil[i].Store(0) }

// Lease implements [queue.Work]. One pass asks the shards in turn until
// it has n leases, starting at a shard that moves on every rotateEvery
// (from a random shard in each process), so that none starves while the
// calls a process makes at about the same time go to one shard and share
// its script calls (see [Store]), as on one server. It passes over the
// shards it found empty in the last moment (emptyMemory): an idle fleet
// polls each shard a few times a second, not in a loop, and a queue whose
// work sits in a few shards costs few calls.
// Passes back off from 2ms to 100ms while wait lasts; the last pass, when
// wait is over (at once for a wait of 0), asks every shard, so Lease
// returns nothing only when each shard had nothing.
func (s *Sharded) Lease(ctx context.Context, n int, ttl, wait time.Duration) ([]queue.Lease, error) {
	if err := s.shards[0].check(ctx); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	until := time.Now().Add(wait)
	backoff := 2 * time.Millisecond
	for {
		left := time.Until(until)
		ls, err := s.leasePass(ctx, n, ttl, left > 0)
		if err != nil || len(ls) > 0 || left <= 0 {
			return ls, err
		}
		if backoff, err = pollPause(ctx, backoff, left); err != nil {
			return nil, err
		}
	}
}

// leasePass asks each shard once, from the next starting shard, for the
// leases still wanted; with skipEmpty it passes over shards found empty
// lately. A shard that fails (its master is being replaced, say) is passed
// over like an empty one, so the others keep the probe busy; the pass
// returns the first error only when it leased nothing.
func (s *Sharded) leasePass(ctx context.Context, n int, ttl time.Duration, skipEmpty bool) ([]queue.Lease, error) {
	k := len(s.shards)
	now := time.Now().UnixNano()
	start := int((s.offset + uint64(s.now().UnixNano()/int64(rotateEvery))) % uint64(k))
	var out []queue.Lease
	var first error
	for j := 0; j < k && len(out) < n; j++ {
		i := (start + j) % k
		if skipEmpty && s.emptyUntil[i].Load() > now {
			continue
		}
		ls, err := s.shards[i].Lease(ctx, n-len(out), ttl, 0)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, queue.ErrClosed) {
				if len(out) > 0 {
					return out, nil
				}
				return nil, err
			}
			first = cmp.Or(first, err)
			s.emptyUntil[i].Store(now + int64(emptyMemory))
			continue
		}
		if len(ls) == 0 {
			s.emptyUntil[i].Store(now + int64(emptyMemory))
		}
		for _, l := range ls {
			l.ID = outID(l.ID, i)
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, first
	}
	return out, nil
}

// AckAll implements [queue.Worker]: each shard acks its hosts' leases and
// keeps their probes in one call, so no host is acked before its record is
// kept.
func (s *Sharded) AckAll(ctx context.Context, ls []queue.Lease, ps []queue.Visit) ([]bool, error) {
	if err := queue.CheckVisits(ps); err != nil {
		return nil, err
	}
	gl := s.byShard(len(ls), func(j int) host.Name { return ls[j].Item.Host })
	gp := s.byShard(len(ps), func(j int) host.Name { return ps[j].Host })
	all := map[int][]int{}
	for i := range gl {
		all[i] = nil
	}
	for i := range gp {
		all[i] = nil
	}
	ok := make([]bool, len(ls))
	err := s.inShards(ctx, all, func(i int, _ []int) error {
		res, err := s.shards[i].AckAll(ctx, inLeases(pick(ls, gl[i]), i), pick(ps, gp[i]))
		for j, v := range res {
			ok[gl[i][j]] = v
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return ok, nil
}

// byShard groups the indexes 0..n-1 by the shard of hostOf(j), in order.
func (s *Sharded) byShard(n int, hostOf func(j int) host.Name) map[int][]int {
	g := map[int][]int{}
	for j := 0; j < n; j++ {
		i := s.shardOf(hostOf(j))
		g[i] = append(g[i], j)
	}
	return g
}

// pick returns xs at the indexes idx.
func pick[T any](xs []T, idx []int) []T {
	if len(idx) == 0 {
		return nil
	}
	out := make([]T, len(idx))
	for k, j := range idx {
		out[k] = xs[j]
	}
	return out
}

// inShards calls fn for each shard of groups with its indexes, a few
// shards at a time, and returns the first error.
func (s *Sharded) inShards(ctx context.Context, groups map[int][]int, fn func(i int, idx []int) error) error {
	if err := s.shards[0].check(ctx); err != nil {
		return err
	}
	ids := make([]int, 0, len(groups))
	for i := range groups {
		ids = append(ids, i)
	}
	if len(ids) == 1 {
		return fn(ids[0], groups[ids[0]])
	}
	return parallel(len(ids), func(j int) error { return fn(ids[j], groups[ids[j]]) })
}

// Extend implements [queue.Work] in the lease's shard.
func (s *Sharded) Extend(ctx context.Context, l queue.Lease, ttl time.Duration) (queue.Lease, error) {
	i := s.shardOf(l.Item.Host)
	l2, err := s.shards[i].Extend(ctx, inLeases([]queue.Lease{l}, i)[0], ttl)
	if err == nil {
		l2.ID = l.ID
	}
	return l2, err
}

// Fail implements [queue.Work] in the lease's shard.
func (s *Sharded) Fail(ctx context.Context, l queue.Lease, reason string, maxAttempts int) error {
	i := s.shardOf(l.Item.Host)
	err := s.shards[i].Fail(ctx, inLeases([]queue.Lease{l}, i)[0], reason, maxAttempts)
	s.notEmpty(i)
	return err
}

// Release implements [queue.Work], each lease in its shard.
func (s *Sharded) Release(ctx context.Context, ls []queue.Lease) (int, error) {
	g := s.byShard(len(ls), func(j int) host.Name { return ls[j].Item.Host })
	var mu sync.Mutex
	total := 0
	err := s.inShards(ctx, g, func(i int, idx []int) error {
		n, err := s.shards[i].Release(ctx, inLeases(pick(ls, idx), i))
		mu.Lock()
		total += n
		mu.Unlock()
		s.notEmpty(i)
		return err
	})
	return total, err
}

// Reclaim implements [queue.Work] in every shard.
func (s *Sharded) Reclaim(ctx context.Context, ttl time.Duration, maxAttempts int) (queue.ReclaimResult, error) {
	var mu sync.Mutex
	var res queue.ReclaimResult
	err := s.each(ctx, func(i int, st *Store) error {
		r, err := st.Reclaim(ctx, ttl, maxAttempts)
		mu.Lock()
		res.Requeued = append(res.Requeued, r.Requeued...)
		res.Dead = append(res.Dead, r.Dead...)
		mu.Unlock()
		if len(r.Requeued) > 0 {
			s.notEmpty(i)
		}
		return err
	})
	return res, err
}

// Stats implements [queue.Worker]: the sums over the shards, and the
// oldest lease of any.
func (s *Sharded) Stats(ctx context.Context) (queue.Stats, error) {
	var mu sync.Mutex
	var sum queue.Stats
	err := s.each(ctx, func(_ int, st *Store) error {
		r, err := st.Stats(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		sum.Pending += r.Pending
		sum.Processing += r.Processing
		sum.Dead += r.Dead
		sum.Seen += r.Seen
		sum.OldestLeaseAge = max(sum.OldestLeaseAge, r.OldestLeaseAge)
		return nil
	})
	if err != nil {
		return queue.Stats{}, err
	}
	return sum, nil
}

// Queued implements [queue.Work], each host in its shard.
func (s *Sharded) Queued(ctx context.Context, hosts []host.Name) ([]bool, error) {
	g := s.byShard(len(hosts), func(j int) host.Name { return hosts[j] })
	out := make([]bool, len(hosts))
	err := s.inShards(ctx, g, func(i int, idx []int) error {
		r, err := s.shards[i].Queued(ctx, pick(hosts, idx))
		for k, v := range r {
			out[idx[k]] = v
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// inLeases returns copies of shard i's leases ls with the IDs the shard
// knows them by.
func inLeases(ls []queue.Lease, i int) []queue.Lease {
	out := make([]queue.Lease, len(ls))
	for j, l := range ls {
		l.ID = inID(l.ID, i)
		out[j] = l
	}
	return out
}
