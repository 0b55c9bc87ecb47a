package redisstore

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"

	"spyder/queue"
)

// Ack implements [queue.Queue]. Concurrent Ack and Lease calls share
// script calls (see [Store]).
func (s *Store) Ack(ctx context.Context, l queue.Lease) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	m := leaseMember(l)
	if m == "" {
		return queue.ErrLeaseLost
	}
	res, err := s.hot.do(ctx, op{ack: m})
	if err != nil {
		return batchErr("ack", err)
	}
	if !res.acked {
		return queue.ErrLeaseLost
	}
	return nil
}

//go:embed extend.lua
var extendLua string

var extendScript = redis.NewScript(extendLua)

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
