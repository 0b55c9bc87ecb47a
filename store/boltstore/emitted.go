package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/store"
)

// bucketEmitted holds one nested bucket per run, named after the run ID,
// whose keys are the 16-byte hashes ([store.KeyHash]) of the nodes and edges
// emitted in that run.
var bucketEmitted = []byte("emitted")

// Emitted is the seen set of the crawl's output, kept in the bbolt file
// beside the queue so that a resumed run does not repeat what it emitted.
// It is safe for concurrent use.
type Emitted struct {
	db    *bbolt.DB
	fault *mapFault
}

var _ store.Emitted = (*Emitted)(nil)

// Emitted returns the seen set kept in the store's file, creating its
// bucket if needed. It implements [store.Backend].
func (s *Store) Emitted() (store.Emitted, error) {
	e, err := newEmitted(s.db, s.fault)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// newEmitted returns the seen set kept in db, creating its bucket if needed.
func newEmitted(db *bbolt.DB, f *mapFault) (*Emitted, error) {
	err := ensureBucket(db, bucketEmitted, "emitted", func(b *bbolt.Bucket) error {
		// Mark would fail for every batch of a run whose name holds a value
		// instead of a bucket, and every host would go to dead for it.
		return b.ForEach(func(k, v []byte) error {
			if v != nil {
				return fmt.Errorf("bucket %s holds a value under %q, where spyder keeps one bucket per run: the file is damaged or another program wrote to it", bucketEmitted, k)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return &Emitted{db: db, fault: f}, nil
}

// Seen implements [store.Emitted].
func (e *Emitted) Seen(ctx context.Context, run string, keys []string) ([]bool, error) {
	out := make([]bool, len(keys))
	if len(keys) == 0 {
		return out, ctx.Err()
	}
	err := e.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketEmitted).Bucket([]byte(run))
		if b == nil {
			return nil
		}
		key := keyOf(b)
		for i, k := range keys {
			out[i] = b.Get(key(k)) != nil
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("emitted seen: %w", err)
	}
	return out, nil
}

// Mark implements [store.Emitted]. The keys are durable when it returns
// (unless the file was opened with NoSync).
func (e *Emitted) Mark(ctx context.Context, run string, keys []string) error {
	if len(keys) == 0 {
		return ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := update(e.db, e.fault, func(tx *bbolt.Tx) error {
		b, err := tx.Bucket(bucketEmitted).CreateBucketIfNotExists([]byte(run))
		if err != nil {
			return err
		}
		b.FillPercent = emittedFill
		key := keyOf(b)
		for _, k := range keys {
			if err := b.Put(key(k), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("emitted mark: %w", err)
	}
	return nil
}

// printKey is the bbolt key of an output key: its 8-byte print.
func printKey(k string) []byte {
	return binary.BigEndian.AppendUint64(nil, store.KeyPrint(k))
}

// hashKey is how an older spyder keyed an output key: the first 16 bytes
// of its SHA-256.
func hashKey(k string) []byte {
	h := store.KeyHash(k)
	return h[:]
}

// keyOf returns how run bucket b keys output keys: a run an older spyder
// began holds 16-byte hashes and goes on with them, so that it repeats
// nothing; any other run holds 8-byte prints.
func keyOf(b *bbolt.Bucket) func(string) []byte {
	if k, _ := b.Cursor().First(); len(k) == 16 {
		return hashKey
	}
	return printKey
}

// emittedFill is the fill of a run bucket's pages: prints arrive in no
// order, so a page split leaves both halves room for the keys that fall
// between, and bbolt's default (half full) suits them.
const emittedFill = bbolt.DefaultFillPercent

// DropRun implements [store.RunDropper]: it deletes run's bucket, whose
// pages the file then reuses.
func (e *Emitted) DropRun(ctx context.Context, run string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	err := update(e.db, e.fault, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketEmitted).Bucket([]byte(run))
		if b == nil {
			return nil
		}
		n = int64(b.Stats().KeyN)
		return tx.Bucket(bucketEmitted).DeleteBucket([]byte(run))
	})
	if err != nil {
		return 0, fmt.Errorf("drop run %s: %w", run, err)
	}
	return n, nil
}
