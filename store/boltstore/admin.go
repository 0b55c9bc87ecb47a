package boltstore

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// Stats implements [queue.Queue.Stats]. It reads one snapshot: the sizes
// kept beside the buckets, and a scan of processing for the lease age.
func (s *Store) Stats(ctx context.Context) (queue.Stats, error) {
	var st queue.Stats
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		c := readCounts(tx)
		st.Pending, st.Processing, st.Dead, st.Seen = c.pending, c.processing, c.dead, c.seen
		var oldest time.Time
		err := tx.Bucket(bucketProcessing).ForEach(func(_, v []byte) error {
			if r, err := parseProc(v); err == nil && (oldest.IsZero() || r.start.Before(oldest)) {
				oldest = r.start
			}
			return nil
		})
		if !oldest.IsZero() {
			st.OldestLeaseAge = max(s.leaseNow().Sub(oldest), 0)
		}
		return err
	})
	if err != nil {
		return queue.Stats{}, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}

// Dead implements [queue.Queue.Dead].
func (s *Store) Dead(ctx context.Context, limit int) ([]queue.DeadItem, error) {
	var out []queue.DeadItem
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketDead).Cursor()
		for k, v := c.First(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
			out = append(out, parseDead(v))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dead: %w", err)
	}
	return out, nil
}

// RetryDead implements [queue.Queue.RetryDead]. Only items that decode are
// retried (to the back of pending); undecodable bytes would only die again,
// so they stay dead until purged.
func (s *Store) RetryDead(ctx context.Context, limit int) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		n = 0
		dead, pending := tx.Bucket(bucketDead), tx.Bucket(bucketPending)
		var keys [][]byte
		c := dead.Cursor()
		for k, v := c.First(); k != nil && (limit <= 0 || len(keys) < limit); k, v = c.Next() {
			d := parseDead(v)
			if d.Item == nil {
				continue
			}
			d.Item.Attempt = 0
			if err := pushBack(pending, d.Item.Encode()); err != nil {
				return err
			}
			if err := s.setSeen(tx, d.Item.Host, seenQueued, true); err != nil {
				return err
			}
			keys = append(keys, append([]byte(nil), k...))
		}
		for _, k := range keys {
			if err := dead.Delete(k); err != nil {
				return err
			}
		}
		n = len(keys)
		return addCounts(tx, counts{pending: int64(n), dead: -int64(n)})
	})
	if err != nil {
		return 0, fmt.Errorf("retry dead: %w", err)
	}
	if n > 0 {
		s.wake()
	}
	return n, nil
}

// PurgeDead implements [queue.Queue.PurgeDead].
func (s *Store) PurgeDead(ctx context.Context) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketDead).Stats().KeyN
		if err := tx.DeleteBucket(bucketDead); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(bucketDead); err != nil {
			return err
		}
		return addCounts(tx, counts{dead: -int64(n)})
	})
	if err != nil {
		return 0, fmt.Errorf("purge dead: %w", err)
	}
	return n, nil
}

// Dump implements [queue.Queue.Dump] from one read transaction, so the
// records are a consistent snapshot. Processing records come in lease ID
// order and seen hosts sorted. fn must not call the store's write methods:
// a commit that grows the file waits for the read transaction to end.
func (s *Store) Dump(ctx context.Context, fn func(queue.Record) error) error {
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		n := 0
		each := func(b []byte, rec func(k, v []byte) (queue.Record, error)) error {
			return tx.Bucket(b).ForEach(func(k, v []byte) error {
				if n++; n%1024 == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
				r, err := rec(k, v)
				if err != nil {
					return err
				}
				return fn(r)
			})
		}
		err := each(bucketPending, func(_, v []byte) (queue.Record, error) {
			raw := append([]byte(nil), v...)
			if it, err := queue.DecodeItem(raw); err == nil {
				return queue.Record{Kind: queue.KindPending, Item: &it}, nil
			}
			return queue.Record{Kind: queue.KindPending, Raw: raw}, nil
		})
		if err != nil {
			return err
		}
		err = each(bucketProcessing, func(k, v []byte) (queue.Record, error) {
			// A record no worker can hold (its bytes do not decode, or it is
			// not a processing record at all) comes out as the raw pending
			// record it is: Reclaim sends it to dead.
			r, err := parseProc(v)
			if err != nil {
				return queue.Record{Kind: queue.KindPending, Raw: append([]byte(nil), v...)}, nil
			}
			it, err := queue.DecodeItem(r.raw)
			if err != nil {
				return queue.Record{Kind: queue.KindPending, Raw: append([]byte(nil), r.raw...)}, nil
			}
			return queue.Record{Kind: queue.KindProcessing, Item: &it, LeaseID: string(k), Deadline: r.deadline}, nil
		})
		if err != nil {
			return err
		}
		err = each(bucketDead, func(k, v []byte) (queue.Record, error) {
			d := parseDead(v)
			r := queue.Record{Kind: queue.KindDead, Item: d.Item, Error: d.Error, At: d.At}
			if d.Item == nil {
				r.Raw = d.Raw
			}
			return r, nil
		})
		if err != nil {
			return err
		}
		return each(bucketSeen, func(k, v []byte) (queue.Record, error) {
			r := queue.Record{Kind: queue.KindSeen, Host: host.Name(k)}
			if p, err := queue.ParseVisit(r.Host, string(v)); err == nil {
				r.At, r.Outcome = p.At, p.Outcome
			}
			return r, nil
		})
	})
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	return nil
}

// Load implements [queue.Queue.Load] in one transaction. Loaded leases keep
// their IDs and deadlines; their start time (for the oldest lease age) is the
// load time.
func (s *Store) Load(ctx context.Context, recs []queue.Record) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketPending, bucketProcessing, bucketDead, bucketSeen} {
			if k, _ := tx.Bucket(b).Cursor().First(); k != nil {
				return queue.ErrNotEmpty
			}
		}
		now := s.leaseNow()
		pending, proc := tx.Bucket(bucketPending), tx.Bucket(bucketProcessing)
		dead, seen := tx.Bucket(bucketDead), tx.Bucket(bucketSeen)
		var d counts
		queued := queue.QueuedHosts(recs)
		for i, r := range recs {
			if i%1024 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			raw := r.Raw
			if r.Item != nil {
				var err error
				if raw, err = r.Item.MarshalJSON(); err != nil {
					return fmt.Errorf("record %d: %w", i, err)
				}
			}
			var err error
			switch r.Kind {
			case queue.KindPending:
				err = pushBack(pending, raw)
				d.pending++
			case queue.KindProcessing:
				if r.LeaseID == "" || proc.Get([]byte(r.LeaseID)) != nil {
					return fmt.Errorf("record %d: missing or duplicate lease ID %q", i, r.LeaseID)
				}
				if err = proc.Put([]byte(r.LeaseID), procValue(r.Deadline, now, raw)); err == nil {
					err = bumpLeaseSeq(proc, r.LeaseID)
				}
				d.processing++
			case queue.KindDead:
				err = putDead(dead, raw, r.Error, time.Unix(r.At, 0))
				d.dead++
			case queue.KindSeen:
				if seen.Get([]byte(r.Host)) == nil {
					d.seen++
				}
				v := seenIdle
				switch {
				case r.Outcome != "":
					v = []byte(queue.Visit{At: r.At, Outcome: r.Outcome}.Encode())
				case queued[r.Host]:
					v = seenQueued
				}
				err = seen.Put([]byte(r.Host), v)
			default:
				err = fmt.Errorf("unknown kind %q", r.Kind)
			}
			if err != nil {
				return fmt.Errorf("record %d: %w", i, err)
			}
		}
		return addCounts(tx, d)
	})
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	s.wake()
	return nil
}
