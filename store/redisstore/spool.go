package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Spool is a durable FIFO of output batches waiting for delivery, shared by
// every probe on one Redis: a stream under "{base}:spool" whose entries have
// one field, "b", holding the batch. Any probe may replay what another one
// spooled. It is safe for concurrent use; two probes replaying at once may
// both deliver the oldest entry (delivery is at-least-once).
type Spool struct {
	c   redis.UniversalClient
	key string
}

// NewSpool returns the spool under base (the queue's base key) in c.
func NewSpool(c redis.UniversalClient, base string) *Spool {
	return &Spool{c: c, key: base + ":spool"}
}

// Put appends data to the spool. It is as durable as the server's
// persistence when Put returns.
func (s *Spool) Put(ctx context.Context, data []byte) error {
	err := s.c.XAdd(ctx, &redis.XAddArgs{Stream: s.key, Values: []any{"b", data}}).Err()
	if err != nil {
		return fmt.Errorf("spool put %s: %w", s.key, refusal(err))
	}
	return nil
}

// Peek returns the oldest spooled entry and its ID, or an empty ID when the
// spool is empty. The entry stays until [Spool.Remove]. Entries without a
// "b" field were not written by a Spool: they are passed over and left in
// the stream (counted by Len), so that they neither block the spool nor are
// delivered as empty batches.
func (s *Spool) Peek(ctx context.Context) (id string, data []byte, err error) {
	start := "-"
	for {
		msgs, err := s.c.XRangeN(ctx, s.key, start, "+", 16).Result()
		if err != nil {
			return "", nil, fmt.Errorf("spool peek %s: %w", s.key, err)
		}
		for _, m := range msgs {
			if v, ok := m.Values["b"].(string); ok {
				return m.ID, []byte(v), nil
			}
		}
		if len(msgs) < 16 {
			return "", nil, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// Remove deletes the entry id (from [Spool.Peek]); removing an entry that is
// already gone is not an error.
func (s *Spool) Remove(ctx context.Context, id string) error {
	if err := s.c.XDel(ctx, s.key, id).Err(); err != nil {
		return fmt.Errorf("spool remove %s: %w", s.key, err)
	}
	return nil
}

// Len reports how many entries the spool holds.
func (s *Spool) Len(ctx context.Context) (int, error) {
	n, err := s.c.XLen(ctx, s.key).Result()
	if err != nil {
		return 0, fmt.Errorf("spool len %s: %w", s.key, err)
	}
	return int(n), nil
}
