package redisstore

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/queue"
)

// AckAll implements [queue.Queue.AckAll]. Up to maxBatch leases go in one
// script call, shared with other callers' AckAll and Lease calls (see
// [Store]).
func (s *Store) AckAll(ctx context.Context, ls []queue.Lease) ([]bool, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	ok := make([]bool, 0, len(ls))
	for len(ls) > 0 {
		chunk := ls[:min(len(ls), maxBatch)]
		ls = ls[len(chunk):]
		ms := make([]string, len(chunk))
		for i, l := range chunk {
			// A lease without an ID was never this store's: its member
			// matches nothing, so it is reported lost like any other.
			ms[i] = leaseMember(l)
		}
		res, err := s.hot.do(ctx, op{acks: ms})
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
