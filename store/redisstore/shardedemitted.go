package redisstore

import (
	"context"

	"github.com/spyder-crawler/spyder/store"
)

// ShardedEmitted is the output seen set of a [Sharded] queue: each key
// lives in the [Emitted] of the shard a hash of the key picks, so every
// script call stays in one shard's slot. Seen claims shard after shard in
// shard order, so two owners whose batches overlap never hold claims the
// other waits for (the first to reach a shard takes its keys; the other
// waits there holding nothing the first needs). It is safe for concurrent
// use, with the caveats of [Emitted].
type ShardedEmitted struct {
	parts []*Emitted
	s     *Sharded // whose calls ride out failovers
}

var _ store.Emitted = (*ShardedEmitted)(nil)

// byPart groups keys by their shard, keeping the indexes.
func (e *ShardedEmitted) byPart(keys []string) map[int][]int {
	g := map[int][]int{}
	for j, k := range keys {
		i := shardOfKey(k, len(e.parts))
		g[i] = append(g[i], j)
	}
	return g
}

// Seen implements [store.Emitted], asking each shard about its keys in
// shard order.
func (e *ShardedEmitted) Seen(ctx context.Context, run string, keys []string) ([]bool, error) {
	g := e.byPart(keys)
	out := make([]bool, len(keys))
	for i, p := range e.parts {
		idx, ok := g[i]
		if !ok {
			continue
		}
		got, err := p.Seen(ctx, run, pick(keys, idx))
		if err != nil {
			return nil, err
		}
		for k, v := range got {
			out[idx[k]] = v
		}
	}
	return out, nil
}

// Mark implements [store.Emitted], in every shard with keys at once.
func (e *ShardedEmitted) Mark(ctx context.Context, run string, keys []string) error {
	g := e.byPart(keys)
	ids := make([]int, 0, len(g))
	for i := range g {
		ids = append(ids, i)
	}
	return parallel(len(ids), func(j int) error {
		i := ids[j]
		err := e.parts[i].Mark(ctx, run, pick(keys, g[i]))
		return err
	})
}

var _ store.RunDropper = (*ShardedEmitted)(nil)

// DropRun implements [store.RunDropper]: it drops run's seen set in every
// shard and reports how many keys they held together.
func (e *ShardedEmitted) DropRun(ctx context.Context, run string) (int64, error) {
	var total int64
	for _, p := range e.parts {
		n, err := p.DropRun(ctx, run)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
