package boltstore

import (
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// seedChunk is how many hosts one Seed transaction takes.
const seedChunk = 50_000

// Seed implements [queue.Queue.Seed]: one transaction per chunk of hosts.
// A cancelled ctx stops it between chunks; chunks already committed stay,
// and their counts are returned with the error.
func (s *Store) Seed(ctx context.Context, hosts []host.Name) (queue.SeedResult, error) {
	var res queue.SeedResult
	if err := s.check(ctx); err != nil {
		return res, err
	}
	ts := s.now().Unix()
	for start := 0; start < len(hosts); start += seedChunk {
		norm := hosts[start:min(start+seedChunk, len(hosts))]
		var added, dup int
		err := s.update(ctx, func(tx *bbolt.Tx) error {
			added, dup = 0, 0
			seen, pending := tx.Bucket(bucketSeen), tx.Bucket(bucketPending)
			for _, h := range norm {
				if seen.Get([]byte(h)) != nil {
					dup++
					continue
				}
				if err := seen.Put([]byte(h), []byte{}); err != nil {
					return err
				}
				it := queue.Item{Host: h, TS: ts}
				if err := pushBack(pending, it.Encode()); err != nil {
					return err
				}
				added++
			}
			return addCounts(tx, counts{pending: int64(added), seen: int64(added)})
		})
		if err != nil {
			return res, fmt.Errorf("seed: %w", err)
		}
		res.Added += added
		res.Duplicate += dup
		if added > 0 {
			s.wake()
		}
	}
	return res, nil
}
