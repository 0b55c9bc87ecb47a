package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"spyder/queue"
)

// maxLeaseBatch bounds the items one lease script call moves.
const maxLeaseBatch = 1000

// leaseReq is one caller's share of a batched lease.
type leaseReq struct {
	n     int
	ttlMs int64
}

// leaseRes is what a caller gets back from a batched lease. buried reports
// that the batch met undecodable items, so an empty result does not mean
// the queue is empty.
type leaseRes struct {
	leases []queue.Lease
	buried bool
}

// Lease implements [queue.Queue]. It polls while the queue is empty, backing
// off from 2ms to 100ms, until wait has passed or ctx ends; concurrent calls
// share script calls (see [Store]).
func (s *Store) Lease(ctx context.Context, n int, ttl, wait time.Duration) ([]queue.Lease, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	req := leaseReq{n: min(n, maxLeaseBatch), ttlMs: ttlMillis(ttl)}
	until := time.Now().Add(wait)
	backoff := 2 * time.Millisecond
	for {
		res, err := s.leaser.do(ctx, req)
		if err != nil {
			return nil, interpret("lease", err)
		}
		if len(res.leases) > 0 {
			return res.leases, nil
		}
		if res.buried {
			continue // undecodable items were in the way; more may follow
		}
		left := time.Until(until)
		if left <= 0 {
			return nil, nil
		}
		t := time.NewTimer(min(backoff, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

//go:embed lease.lua
var leaseLua string

var leaseScript = redis.NewScript(leaseLua)

// leaseBatch runs one lease script for several callers, sends the items
// that do not decode to dead, and shares the rest out in order.
func (s *Store) leaseBatch(ctx context.Context, reqs []leaseReq) ([]leaseRes, error) {
	args := make([]any, 1, 1+2*len(reqs))
	args[0] = s.nowArg()
	for _, r := range reqs {
		args = append(args, r.n, r.ttlMs)
	}
	v, err := s.run(ctx, "lease", leaseScript, []string{s.k.pending, s.k.leases, s.k.leased, s.k.leaseSeq}, args...)
	if err != nil {
		return nil, err
	}
	reply, _ := v.([]any)
	if len(reply) == 0 {
		return nil, fmt.Errorf("redisstore: lease: empty reply")
	}
	now := time.UnixMilli(toInt64(reply[0]))
	out := make([]leaseRes, len(reqs))
	var bury []any // finish triples sending undecodable items to dead
	r, left := 0, reqs[0].n
	for i := 1; i+1 < len(reply); i += 2 {
		for left == 0 {
			r++
			left = reqs[r].n
		}
		left--
		id, raw := toString(reply[i]), []byte(toString(reply[i+1]))
		it, err := queue.DecodeItem(raw)
		if err != nil {
			bury = append(bury, id, "dead", s.deadEntry(raw, nil, "undecodable item: "+err.Error()))
			out[r].buried = true
			continue
		}
		out[r].leases = append(out[r].leases, queue.Lease{
			Item:     it,
			Raw:      raw,
			ID:       id,
			Deadline: now.Add(time.Duration(reqs[r].ttlMs) * time.Millisecond),
		})
	}
	if len(bury) > 0 {
		// On error the undecodable items stay leased under IDs nobody holds:
		// Reclaim brings them back and the next Lease buries them. The
		// decoded ones are the callers' either way.
		_, _ = s.finish(ctx, "lease: bury undecodable", bury)
		for i := range out {
			out[i].buried = true
		}
	}
	return out, nil
}
