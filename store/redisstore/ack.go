package redisstore

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/queue"
)

// AckAll implements [queue.Work.AckAll]. Up to maxBatch probes and
// maxBatch leases go in one leaseack.lua call, shared with other callers'
// AckAll and Lease calls (see [Store]). With more than that, the probes go
// first and the leases only in the call with the last of them, so that no
// host is acked before its record is kept.
func (s *Store) AckAll(ctx context.Context, ls []queue.Lease, ps []queue.Visit) ([]bool, error) {
	if err := queue.CheckVisits(ps); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	ok := make([]bool, 0, len(ls))
	for len(ls) > 0 || len(ps) > 0 {
		pc := ps[:min(len(ps), maxBatch)]
		ps = ps[len(pc):]
		var lc []queue.Lease
		if len(ps) == 0 {
			lc = ls[:min(len(ls), maxBatch)]
			ls = ls[len(lc):]
		}
		o := op{probes: make([]string, 0, 2*len(pc)), hashes: make([]byte, 0, 4*len(pc)), acks: make([]string, len(lc))}
		for _, p := range pc {
			o.probes = append(o.probes, string(p.Host), p.Encode())
			o.hashes = appendHostHash(o.hashes, string(p.Host))
		}
		for i, l := range lc {
			// A lease without an ID was never this store's: its member
			// matches nothing, so it is reported lost like any other.
			o.acks[i] = leaseMember(l)
		}
		res, err := s.hot.do(ctx, o)
		if err != nil {
			return nil, batchErr("ack", err)
		}
		ok = append(ok, res.acked...)
	}
	return ok, nil
}

//go:embed extend.lua
var extendLua string

var extendScript = redis.NewScript(preludeLua + extendLua)

// Extend implements [queue.Queue]. A lease past its deadline that no
// Reclaim has taken yet is still held and can be extended.
func (s *Store) Extend(ctx context.Context, l queue.Lease, ttl time.Duration) (queue.Lease, error) {
	if l.ID == "" {
		if err := s.check(ctx); err != nil {
			return l, err
		}
		return l, queue.ErrLeaseLost
	}
	v, err := s.run(ctx, "extend", extendScript, []string{s.k.leases}, leaseMember(l), s.nowArg(), ttlMillis(ttl))
	if err != nil {
		return l, err
	}
	d := toInt64(v)
	if d == 0 {
		return l, queue.ErrLeaseLost
	}
	l.Deadline = time.UnixMilli(d)
	return l, nil
}
