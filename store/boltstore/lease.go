package boltstore

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// Lease implements [queue.Queue.Lease]. Leases from many goroutines share
// one transaction. While nothing is pending it waits for Seed, Fail, Release,
// Reclaim, RetryDead or Load to add work, up to wait; cancelling ctx or
// closing the store ends the wait at once.
func (s *Store) Lease(ctx context.Context, n int, ttl, wait time.Duration) ([]queue.Lease, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	var timer *time.Timer
	for {
		avail := s.availCh() // before trying, so no wake-up is missed
		ls, err := s.leaseOnce(ctx, n, ttl)
		if err != nil || len(ls) > 0 || wait <= 0 {
			return ls, err
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		select {
		case <-avail:
		case <-timer.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.quit:
			return nil, queue.ErrClosed
		}
	}
}

func (s *Store) leaseOnce(ctx context.Context, n int, ttl time.Duration) ([]queue.Lease, error) {
	var out []queue.Lease
	// The lease is answered before its commit is durable: only this
	// process can see it, so a crash before the commit loses nothing (the
	// items are still pending in the file), and every later call on it
	// (AckAll, Extend, Fail) runs after that commit.
	o := &op{ctx: ctx, apply: s.leaseApply(&out, n, ttl), early: make(chan struct{})}
	if err := s.enqueue(ctx, o); err != nil {
		return nil, fmt.Errorf("lease: %w", err)
	}
	return out, nil
}

// leaseApply moves up to n pending items to processing, setting *out.
func (s *Store) leaseApply(out *[]queue.Lease, n int, ttl time.Duration) func(*bbolt.Tx) error {
	return func(tx *bbolt.Tx) error {
		*out = (*out)[:0]
		now, wall := s.leaseNow(), s.now()
		deadline := now.Add(ttl)
		pending, proc := tx.Bucket(bucketPending), tx.Bucket(bucketProcessing)
		c := pending.Cursor()
		var d counts
		for len(*out) < n {
			k, v := c.First()
			if k == nil {
				break
			}
			raw := append([]byte(nil), v...)
			if err := c.Delete(); err != nil {
				return err
			}
			d.pending--
			it, err := queue.DecodeItem(raw)
			if err != nil {
				if err := putDead(tx.Bucket(bucketDead), raw, "undecodable item: "+err.Error(), wall); err != nil {
					return err
				}
				d.dead++
				continue
			}
			id, err := newLeaseID(proc)
			if err != nil {
				return err
			}
			if err := proc.Put(id, procValue(deadline, now, raw)); err != nil {
				return err
			}
			d.processing++
			*out = append(*out, queue.Lease{Item: it, Raw: raw, ID: string(id), Deadline: deadline})
		}
		return s.count(tx, d)
	}
}

// AckAll implements [queue.Worker.AckAll]: the probes and the acks are one
// op of the group commit, so a batch costs one fsync and no host is acked
// without its record.
func (s *Store) AckAll(ctx context.Context, ls []queue.Lease, ps []queue.Visit) ([]bool, error) {
	if err := queue.CheckVisits(ps); err != nil {
		return nil, err
	}
	if len(ls) == 0 && len(ps) == 0 {
		return []bool{}, s.check(ctx)
	}
	ok := make([]bool, len(ls))
	err := s.do(ctx, false, func(tx *bbolt.Tx) error {
		if err := probedIn(tx, ps); err != nil {
			return err
		}
		for i, l := range ls {
			var err error
			if ok[i], err = s.ackIn(tx, l); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ack: %w", err)
	}
	return ok, nil
}

// ackIn removes l's processing record in tx and reports whether it was
// there.
func (s *Store) ackIn(tx *bbolt.Tx, l queue.Lease) (bool, error) {
	c := tx.Bucket(bucketProcessing).Cursor()
	if k, _ := c.Seek([]byte(l.ID)); l.ID == "" || string(k) != l.ID {
		return false, nil
	}
	if err := c.Delete(); err != nil {
		return false, err
	}
	return true, s.count(tx, counts{processing: -1})
}

// Extend implements [queue.Queue.Extend].
func (s *Store) Extend(ctx context.Context, l queue.Lease, ttl time.Duration) (queue.Lease, error) {
	err := s.do(ctx, false, func(tx *bbolt.Tx) error {
		proc := tx.Bucket(bucketProcessing)
		r, err := s.getProc(proc, l.ID)
		if err != nil {
			return err
		}
		l.Deadline = s.leaseNow().Add(ttl)
		return proc.Put([]byte(l.ID), procValue(l.Deadline, r.start, r.raw))
	})
	if err != nil {
		return queue.Lease{}, fmt.Errorf("extend %s: %w", l.Item.Host, err)
	}
	return l, nil
}

// getProc reads a processing record; ErrLeaseLost when it is gone.
func (s *Store) getProc(proc *bbolt.Bucket, id string) (procRecord, error) {
	v := proc.Get([]byte(id))
	if v == nil {
		return procRecord{}, queue.ErrLeaseLost
	}
	r, err := parseProc(v)
	if err != nil {
		return procRecord{}, fmt.Errorf("lease %s: %w", id, err)
	}
	return r, nil
}

// Fail implements [queue.Queue.Fail]. A retried item goes to the back of
// pending.
func (s *Store) Fail(ctx context.Context, l queue.Lease, reason string, maxAttempts int) error {
	err := s.do(ctx, true, func(tx *bbolt.Tx) error {
		proc := tx.Bucket(bucketProcessing)
		r, err := s.getProc(proc, l.ID)
		if err != nil {
			return err
		}
		if _, _, err := s.retryOrBury(tx, r.raw, reason, maxAttempts, s.now()); err != nil {
			return err
		}
		if err := proc.Delete([]byte(l.ID)); err != nil {
			return err
		}
		return s.count(tx, counts{processing: -1})
	})
	if err != nil {
		return fmt.Errorf("fail %s: %w", l.Item.Host, err)
	}
	return nil
}

// Release implements [queue.Queue.Release]. Released items go to the front
// of pending in the order given, so they are the next leased.
func (s *Store) Release(ctx context.Context, ls []queue.Lease) (int, error) {
	if len(ls) == 0 {
		return 0, s.check(ctx)
	}
	n := 0
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		n = 0
		proc, pending := tx.Bucket(bucketProcessing), tx.Bucket(bucketPending)
		for i := len(ls) - 1; i >= 0; i-- {
			v := proc.Get([]byte(ls[i].ID))
			if v == nil {
				continue
			}
			r, err := parseProc(v)
			if err != nil {
				return fmt.Errorf("lease %s: %w", ls[i].ID, err)
			}
			if err := pushFront(pending, append([]byte(nil), r.raw...)); err != nil {
				return err
			}
			if err := proc.Delete([]byte(ls[i].ID)); err != nil {
				return err
			}
			n++
		}
		return s.count(tx, counts{pending: int64(n), processing: -int64(n)})
	})
	if err != nil {
		return 0, fmt.Errorf("release: %w", err)
	}
	if n > 0 {
		s.wake()
	}
	return n, nil
}

// Reclaim implements [queue.Queue.Reclaim]. Every processing record here has
// a deadline, so ttl is not needed; reclaimed items go to the back of
// pending.
func (s *Store) Reclaim(ctx context.Context, ttl time.Duration, maxAttempts int) (queue.ReclaimResult, error) {
	var res queue.ReclaimResult
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		res = queue.ReclaimResult{}
		now, wall := s.leaseNow(), s.now()
		proc := tx.Bucket(bucketProcessing)
		// Expired leases, and at once the records no worker can hold:
		// Lease never hands out bytes that do not decode, so those were
		// written by something else (and may carry any deadline).
		type expired struct {
			id, raw []byte
			corrupt string // why the record is no lease
		}
		var todo []expired
		err := proc.ForEach(func(k, v []byte) error {
			r, err := parseProc(v)
			switch {
			case err != nil:
				todo = append(todo, expired{append([]byte(nil), k...), append([]byte(nil), v...), fmt.Sprintf("corrupt processing record %q: %v", k, err)})
			case !r.deadline.After(now):
				todo = append(todo, expired{id: append([]byte(nil), k...), raw: append([]byte(nil), r.raw...)})
			default:
				if _, err := queue.DecodeItem(r.raw); err != nil {
					todo = append(todo, expired{id: append([]byte(nil), k...), raw: append([]byte(nil), r.raw...)})
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, e := range todo {
			var h host.Name
			dead := true
			var err error
			if e.corrupt != "" {
				if err = putDead(tx.Bucket(bucketDead), e.raw, e.corrupt, wall); err == nil {
					err = s.count(tx, counts{dead: 1})
				}
			} else {
				h, dead, err = s.retryOrBury(tx, e.raw, fmt.Sprintf("lease %s expired", e.id), maxAttempts, wall)
			}
			if err != nil {
				return err
			}
			if dead {
				res.Dead = append(res.Dead, string(h))
			} else {
				res.Requeued = append(res.Requeued, string(h))
			}
			if err := proc.Delete(e.id); err != nil {
				return err
			}
		}
		return s.count(tx, counts{processing: -int64(len(todo))})
	})
	if err != nil {
		return queue.ReclaimResult{}, fmt.Errorf("reclaim: %w", err)
	}
	if len(res.Requeued) > 0 {
		s.wake()
	}
	return res, nil
}
