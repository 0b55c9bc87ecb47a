package boltstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/store"
)

// bucketProbes holds the probes' heartbeats: probe ID → expiry (8-byte
// big-endian Unix ns on the wall clock) and the beat's JSON. Standalone it
// holds one probe, the process that has the file open.
var bucketProbes = []byte("probes")

// Heartbeat records b as b.ID's latest beat, alive for ttl, and deletes the
// beats that expired. It implements [store.Probes].
func (s *Store) Heartbeat(ctx context.Context, b store.ProbeBeat, ttl time.Duration) error {
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	now := s.now()
	val := binary.BigEndian.AppendUint64(nil, uint64(now.Add(ttl).UnixNano()))
	err = s.update(ctx, func(tx *bbolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucketProbes)
		if err != nil {
			return err
		}
		var gone [][]byte
		bk.ForEach(func(k, v []byte) error {
			if v != nil && !beatAlive(v, now) { // nil: a nested bucket, never ours
				gone = append(gone, k)
			}
			return nil
		})
		for _, k := range gone {
			if err := bk.Delete(k); err != nil {
				return err
			}
		}
		return bk.Put([]byte(b.ID), append(val, data...))
	})
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// Probes returns the beats still alive, sorted by ID (bbolt's key order);
// records spyder did not write are passed over. It implements
// [store.Probes].
func (s *Store) Probes(ctx context.Context) ([]store.ProbeBeat, error) {
	now := s.now()
	var beats []store.ProbeBeat
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		bk := tx.Bucket(bucketProbes)
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, v []byte) error {
			var b store.ProbeBeat
			if beatAlive(v, now) && json.Unmarshal(v[8:], &b) == nil && b.ID != "" {
				beats = append(beats, b)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("probes: %w", err)
	}
	return beats, nil
}

// beatAlive reports whether the heartbeat record v has not expired at now;
// a record too short to hold an expiry is not alive.
func beatAlive(v []byte, now time.Time) bool {
	return len(v) >= 8 && int64(binary.BigEndian.Uint64(v)) > now.UnixNano()
}
