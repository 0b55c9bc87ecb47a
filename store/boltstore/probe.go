package boltstore

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// A host's last probe lives in its seen record's value: empty while the
// host is queued (seeded or requeued, not yet probed), "<unix> <outcome>"
// once it is done, "d" when it is neither (it went to dead, or was
// imported without a probe and without an item). So the record costs a
// host a dozen bytes more, and no key of its own.
var (
	seenQueued = []byte{}
	seenIdle   = []byte("d")
)

// setSeen sets h's seen value to v, counting a host not seen before. With
// overProbe false a probe record is kept (an item pushed by hand for a done
// host went to dead: the host stays done).
func (s *Store) setSeen(tx *bbolt.Tx, h host.Name, v []byte, overProbe bool) error {
	seen := tx.Bucket(bucketSeen)
	old := seen.Get([]byte(h))
	if !overProbe && len(old) > 0 && !bytes.Equal(old, seenIdle) {
		return nil
	}
	if err := seen.Put([]byte(h), v); err != nil {
		return err
	}
	if old == nil {
		return s.count(tx, counts{seen: 1})
	}
	return nil
}

// requeueChunk is how many done hosts one Requeue transaction moves.
const requeueChunk = 10_000

// probedIn keeps each of ps as its host's last probe in tx. A host not yet
// seen (an item pushed by hand) is seen once probed.
func probedIn(tx *bbolt.Tx, ps []queue.Visit) error {
	if len(ps) == 0 {
		return nil
	}
	seen := tx.Bucket(bucketSeen)
	added := 0
	for _, p := range ps {
		if seen.Get([]byte(p.Host)) == nil {
			added++
		}
		if err := seen.Put([]byte(p.Host), []byte(p.Encode())); err != nil {
			return err
		}
	}
	return addCounts(tx, counts{seen: int64(added)})
}

// Queued implements [queue.Work.Queued].
func (s *Store) Queued(ctx context.Context, hosts []host.Name) ([]bool, error) {
	out := make([]bool, len(hosts))
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		seen := tx.Bucket(bucketSeen)
		for i, h := range hosts {
			v := seen.Get([]byte(h))
			out[i] = v != nil && len(v) == 0
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queued: %w", err)
	}
	return out, nil
}

// Requeue implements [queue.Admin.Requeue], one transaction per chunk of
// moved hosts; a cancelled ctx stops it between chunks, and the count
// moved so far is returned with the error.
func (s *Store) Requeue(ctx context.Context, sel queue.Selector) (int, error) {
	moved := 0
	var after []byte // last host looked at
	for {
		n, last, err := s.requeueChunk(ctx, sel, after)
		moved += n
		if err != nil {
			return moved, fmt.Errorf("requeue: %w", err)
		}
		if n > 0 {
			s.wake()
		}
		if last == nil {
			return moved, nil
		}
		after = last
	}
}

// requeueChunk moves up to requeueChunk picked hosts after the host after,
// and returns the last host it looked at (nil at the end of the set).
func (s *Store) requeueChunk(ctx context.Context, sel queue.Selector, after []byte) (int, []byte, error) {
	var n int
	var last []byte
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		n, last = 0, nil
		seen, pending := tx.Bucket(bucketSeen), tx.Bucket(bucketPending)
		ts := s.now().Unix()
		c := seen.Cursor()
		k, v := c.First()
		if after != nil {
			if k, v = c.Seek(after); bytes.Equal(k, after) {
				k, v = c.Next()
			}
		}
		var picked [][]byte
		for ; k != nil; k, v = c.Next() {
			if len(picked) == requeueChunk {
				last = bytes.Clone(picked[len(picked)-1])
				break
			}
			if len(v) == 0 {
				continue
			}
			p, err := queue.ParseVisit(host.Name(k), string(v))
			if err == nil && sel.Match(p) {
				picked = append(picked, bytes.Clone(k))
			}
		}
		for _, h := range picked {
			if err := seen.Put(h, []byte{}); err != nil {
				return err
			}
			it := queue.Item{Host: host.Name(h), TS: ts}
			if err := pushBack(pending, it.Encode()); err != nil {
				return err
			}
		}
		n = len(picked)
		return addCounts(tx, counts{pending: int64(n)})
	})
	return n, last, err
}
