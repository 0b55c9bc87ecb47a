package boltstore

import (
	"context"
	"errors"

	"go.etcd.io/bbolt"

	"spyder/queue"
)

// maxBatch bounds how many calls share one transaction.
const maxBatch = 4096

// op is one call waiting for the shared transaction. apply runs inside it;
// it must check everything before it changes anything, so that a returned
// ErrLeaseLost leaves the transaction as it found it, and it must set its
// results afresh each run (a batch may be retried one op at a time).
type op struct {
	ctx   context.Context
	apply func(tx *bbolt.Tx) error
	wakes bool // a success adds to pending
	done  chan error
}

// do runs apply in the next group commit and returns its result once that
// commit is durable. A ctx cancelled before apply runs makes it return ctx's
// error with nothing changed.
func (s *Store) do(ctx context.Context, wakes bool, apply func(*bbolt.Tx) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	o := &op{ctx: ctx, apply: apply, wakes: wakes, done: make(chan error, 1)}
	select {
	case s.ops <- o:
	case <-s.quit:
		return queue.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-o.done
}

// commitLoop gathers ops into batches: it blocks for one, then takes every
// op already waiting, so batches grow exactly while a commit is running.
func (s *Store) commitLoop() {
	defer close(s.exited)
	batch := make([]*op, 0, 256)
	for {
		select {
		case o := <-s.ops:
			batch = append(batch[:0], o)
		case <-s.quit:
			return
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
			default:
				break gather
			}
		}
		s.commit(batch)
		clear(batch)
	}
}

// commit runs batch in one transaction and replies to every op. If the
// transaction itself fails, each op is retried alone so that one bad op
// cannot fail the others.
func (s *Store) commit(batch []*op) {
	results := make([]error, len(batch))
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for i, o := range batch {
			if err := o.ctx.Err(); err != nil {
				results[i] = err
				continue
			}
			err := o.apply(tx)
			if err != nil && !errors.Is(err, queue.ErrLeaseLost) {
				return err
			}
			results[i] = err
		}
		return nil
	})
	if err != nil {
		if len(batch) == 1 {
			results[0] = translate(err)
		} else {
			for _, o := range batch {
				s.commit([]*op{o})
			}
			return
		}
	}
	wake := false
	for i, o := range batch {
		wake = wake || o.wakes && results[i] == nil
		o.done <- results[i]
	}
	if wake {
		s.wake()
	}
}
