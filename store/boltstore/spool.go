package boltstore

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/store"
)

// bucketSpool holds output batches an ingest endpoint could not take yet:
// 8-byte big-endian sequence keys (oldest first) → the batch's bytes.
var bucketSpool = []byte("spool")

// Spool is a durable FIFO of output batches waiting for delivery, kept in the
// bbolt file beside the queue so that a batch the ingest endpoint refused
// survives a crash and is replayed by the next run. It is safe for
// concurrent use.
type Spool struct {
	db     *bbolt.DB
	fault  *mapFault
	bucket []byte
}

// Spool returns the spool kept in the store's file, creating its bucket if
// needed. It implements [store.Backend].
func (s *Store) Spool() (store.Spool, error) {
	sp, err := newSpool(s.db, s.fault, bucketSpool, "spool")
	if err != nil {
		return nil, err
	}
	return sp, nil
}

// newSpool returns the FIFO kept in db's bucket name (used for what),
// creating the bucket if needed.
func newSpool(db *bbolt.DB, f *mapFault, name []byte, what string) (*Spool, error) {
	err := ensureBucket(db, name, what, func(b *bbolt.Bucket) error {
		// Peek would hand out a nested bucket as an empty batch that
		// Remove cannot delete, blocking the spool for good.
		if n := b.Stats().BucketN - 1; n > 0 {
			return fmt.Errorf("bucket %s holds %d nested bucket(s), which spyder never writes: the file is damaged or another program wrote to it", name, n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Spool{db: db, fault: f, bucket: name}, nil
}

// Put appends data to the spool. It is durable when Put returns (unless the
// file was opened with NoSync).
func (s *Spool) Put(ctx context.Context, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := update(s.db, s.fault, func(tx *bbolt.Tx) error {
		b := tx.Bucket(s.bucket)
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		return b.Put(binary.BigEndian.AppendUint64(nil, seq), data)
	})
	if err != nil {
		return fmt.Errorf("spool put: %w", err)
	}
	return nil
}

// Peek returns the oldest spooled entry and its ID, or an empty ID when the
// spool is empty. The entry stays until [Spool.Remove].
func (s *Spool) Peek(ctx context.Context) (id string, data []byte, err error) {
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		k, v := tx.Bucket(s.bucket).Cursor().First()
		if k != nil {
			id, data = hex.EncodeToString(k), append([]byte(nil), v...)
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("spool peek: %w", err)
	}
	return id, data, nil
}

// Remove deletes the entry id (from [Spool.Peek]); removing an entry that is
// already gone is not an error.
func (s *Spool) Remove(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k, err := hex.DecodeString(id)
	if err != nil || len(k) == 0 {
		return fmt.Errorf("spool remove: bad id %q", id)
	}
	err = update(s.db, s.fault, func(tx *bbolt.Tx) error {
		return tx.Bucket(s.bucket).Delete(k)
	})
	if err != nil {
		return fmt.Errorf("spool remove: %w", err)
	}
	return nil
}

// Len reports how many entries the spool holds.
func (s *Spool) Len(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n := 0
	err := s.db.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(s.bucket).Stats().KeyN
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("spool len: %w", err)
	}
	return n, nil
}
