package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"spyder/queue"
)

// maxAckBatch bounds the leases one ack script call removes.
const maxAckBatch = 1000

// Ack implements [queue.Queue]. Concurrent calls share script calls.
func (s *Store) Ack(ctx context.Context, l queue.Lease) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if l.ID == "" {
		return queue.ErrLeaseLost
	}
	ok, err := s.acker.do(ctx, l.ID)
	if err != nil {
		return interpret("ack", err)
	}
	if !ok {
		return queue.ErrLeaseLost
	}
	return nil
}

//go:embed ack.lua
var ackLua string

var ackScript = redis.NewScript(ackLua)

// ackBatch acks several callers' leases in one script call.
func (s *Store) ackBatch(ctx context.Context, ids []string) ([]bool, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	v, err := s.run(ctx, "ack", ackScript, []string{s.k.leases, s.k.leased}, args...)
	if err != nil {
		return nil, err
	}
	reply, _ := v.([]any)
	if len(reply) != len(ids) {
		return nil, fmt.Errorf("redisstore: ack: %d replies for %d leases", len(reply), len(ids))
	}
	out := make([]bool, len(ids))
	for i := range reply {
		out[i] = toInt64(reply[i]) == 1
	}
	return out, nil
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
	v, err := s.run(ctx, "extend", extendScript, []string{s.k.leases}, l.ID, s.nowArg(), ttlMillis(ttl))
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
