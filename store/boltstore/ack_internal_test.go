package boltstore

import (
	"context"

	"spyder/queue"
)

// ack acks one lease with AckAll, reporting a lost lease as
// queue.ErrLeaseLost, as the one-lease Ack the queue no longer has did.
func ack(ctx context.Context, s *Store, l queue.Lease) error {
	ok, err := s.AckAll(ctx, []queue.Lease{l})
	if err != nil {
		return err
	}
	if !ok[0] {
		return queue.ErrLeaseLost
	}
	return nil
}
