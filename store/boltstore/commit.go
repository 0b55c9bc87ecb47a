package boltstore

import (
	"context"
	"errors"
	"runtime"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/queue"
)

// op is one call waiting for the shared transaction. apply runs inside it;
// it must check everything before it changes anything, so that a returned
// ErrLeaseLost leaves the transaction as it found it, and it must set its
// results afresh each run (a batch may be retried one op at a time).
type op struct {
	ctx   context.Context
	apply func(tx *bbolt.Tx) error
	wakes bool  // a success adds to pending
	err   error // set before the batch's done (or early) is closed

	answered bool // early was closed

	// early, when set, is closed as soon as apply has run, before the
	// commit; see leaseOnce.
	early chan struct{}
}

// batch is the ops that will share one transaction; done is closed once it
// is committed and every op's err is set.
type batch struct {
	ops  []*op
	done chan struct{}
}

// do runs apply in the next group commit and returns its result once that
// commit is durable. A ctx cancelled before apply runs makes it return ctx's
// error with nothing changed; once queued, the call waits for its commit
// (about a millisecond) so that its outcome is known.
func (s *Store) do(ctx context.Context, wakes bool, apply func(*bbolt.Tx) error) error {
	return s.enqueue(ctx, &op{ctx: ctx, apply: apply, wakes: wakes})
}

func (s *Store) enqueue(ctx context.Context, o *op) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.qmu.Lock()
	if s.closed.Load() {
		s.qmu.Unlock()
		return queue.ErrClosed
	}
	if e := s.stopped.Load(); e != nil {
		s.qmu.Unlock()
		return e
	}
	if s.queued == nil {
		s.queued = &batch{done: make(chan struct{})}
	}
	b := s.queued
	b.ops = append(b.ops, o)
	s.qmu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	if o.early != nil {
		select {
		case <-o.early:
		case <-b.done:
		}
	} else {
		<-b.done
	}
	return o.err
}

// commitLoop commits whatever has queued, one transaction at a time: ops
// arriving during a commit form the next batch, so batches grow exactly
// when commits are the bottleneck. After Close it commits what was queued
// and returns.
func (s *Store) commitLoop() {
	defer close(s.exited)
	for {
		<-s.kick
		// Let callers just answered by the last commit join this one:
		// yield while the batch keeps growing.
		for range 4 {
			n := s.queuedLen()
			runtime.Gosched()
			if s.queuedLen() == n {
				break
			}
		}
		s.qmu.Lock()
		b, closed := s.queued, s.closed.Load()
		s.queued, s.committing = nil, b
		s.qmu.Unlock()
		if b != nil {
			s.commit(b.ops)
			close(b.done)
		}
		if closed {
			return
		}
	}
}

// settled waits for the commit in progress, if any, so that a read sees
// the leases Lease already answered.
func (s *Store) settled() {
	s.qmu.Lock()
	b := s.committing
	s.qmu.Unlock()
	if b != nil {
		<-b.done
	}
}

func (s *Store) queuedLen() int {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.queued == nil {
		return 0
	}
	return len(s.queued.ops)
}

// commit runs ops in one transaction and sets each op's err. If an op's
// apply fails, the others are retried one by one so that one bad op cannot
// fail the others. If the commit itself fails (the file took no write) the
// store stops: see Open.
func (s *Store) commit(ops []*op) {
	if e := s.stopped.Load(); e != nil {
		for _, o := range ops {
			if !o.answered {
				o.err = e
			}
		}
		return
	}
	var applyErr error
	err := s.db.Update(func(tx *bbolt.Tx) error {
		s.batchTx, s.batchD = tx, counts{}
		defer func() { s.batchTx = nil }()
		for _, o := range ops {
			if o.answered {
				continue
			}
			if o.err = o.ctx.Err(); o.err != nil {
				continue
			}
			o.err = o.apply(tx)
			if o.err != nil && !errors.Is(o.err, queue.ErrLeaseLost) {
				applyErr = o.err
				return o.err
			}
			if o.early != nil {
				o.answered = true
				close(o.early)
			}
		}
		applyErr = addCounts(tx, s.batchD)
		return applyErr
	})
	if e := s.fault.explain(s.path, err); e != err {
		err, applyErr = e, nil // the file, not an op: the store stops
	}
	switch {
	case err != nil && applyErr == nil:
		// An answered op's caller has its result already; the store
		// stopping is what makes later calls on it fail.
		s.fault.first.CompareAndSwap(nil, &writeError{path: s.path, err: err})
		e := s.stop(err)
		for _, o := range ops {
			if !o.answered {
				o.err = e
			}
		}
		return
	case err != nil && len(ops) == 1:
		ops[0].err = translate(err)
		return
	case err != nil:
		for _, o := range ops {
			s.commit([]*op{o})
		}
		return
	}
	for _, o := range ops {
		if o.wakes && o.err == nil {
			s.wake()
			return
		}
	}
}
