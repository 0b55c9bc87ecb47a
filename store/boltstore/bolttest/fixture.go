// Package bolttest builds bbolt files of a real crawl state and damages
// them in known ways, for the tests of boltstore's check and salvage and
// of the spyder commands that open a --db file.
//
// It reads the undamaged file twice, independently: through bbolt, for
// the records a reader sees, and through its own small page walker, for
// the pages each record is reached through. A damage then says which pages
// it makes unreadable, and so which records a salvage must still recover:
// those reached only through readable pages.
package bolttest

import (
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/store/boltstore"
)

// Hosts is how many hosts MustFixture seeds: enough for the pending and
// seen buckets to have branch pages.
const Hosts = 6000

// MustFixture writes a crawl's state into a new bbolt file in dir and
// returns its path: Hosts hosts seeded (pending and seen), 100 of them in
// flight, 30 dead, spooled batches (one larger than a page), and the
// emitted sets of two runs, one with its own pages and one inline. Its
// last commit changes no record, so both meta pages hold the same records.
func MustFixture(tb testing.TB, dir string) string {
	tb.Helper()
	path := filepath.Join(dir, "fixture.db")
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	hosts := make([]host.Name, Hosts)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("host-%05d.example.com", i))
	}
	must(tb, err2(s.Seed(ctx, hosts)))
	ls, err := s.Lease(ctx, 100, time.Hour, 0)
	must(tb, err)
	for _, l := range ls[:30] {
		must(tb, s.Fail(ctx, l, "ingest down", 1))
	}
	sp, err := s.Spool()
	must(tb, err)
	for i := range 5 {
		must(tb, sp.Put(ctx, []byte(fmt.Sprintf(`{"batch":%d,"pad":%q}`, i, strings.Repeat("x", 300)))))
	}
	must(tb, sp.Put(ctx, []byte(strings.Repeat("big batch ", 1500))))
	em, err := s.Emitted()
	must(tb, err)
	keys := make([]string, 3000)
	for i := range keys {
		keys[i] = fmt.Sprintf("node:%d", i)
	}
	must(tb, em.Mark(ctx, "run-1", keys))
	must(tb, em.Mark(ctx, "run-2", keys[:2]))
	must(tb, s.Close())
	MustNoopCommit(tb, path, false)
	return path
}

// MustNoopCommit commits a transaction that rewrites one record with its
// own value, so that both meta pages name trees with the same records.
// With freelist, the file is opened as bbolt opens by default, which
// writes a freelist page in each commit.
func MustNoopCommit(tb testing.TB, path string, freelist bool) {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{NoFreelistSync: !freelist, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	for range 2 {
		must(tb, db.Update(func(tx *bbolt.Tx) error {
			b := tx.Bucket([]byte("queue-meta"))
			return b.Put([]byte("counts"), append([]byte(nil), b.Get([]byte("counts"))...))
		}))
	}
	must(tb, db.Close())
}

// Records returns every record of the bbolt file at path as bbolt reads
// it, keyed by RecordKey, and every bucket's sequence keyed by its path.
func Records(tb testing.TB, path string) (recs map[string]string, seqs map[string]uint64) {
	tb.Helper()
	db, err := bbolt.Open(path, 0o400, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	recs, seqs = map[string]string{}, map[string]uint64{}
	var walk func(path string, b *bbolt.Bucket) error
	walk = func(path string, b *bbolt.Bucket) error {
		seqs[path] = b.Sequence()
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(path+"/"+string(k), b.Bucket(k))
			}
			recs[RecordKey(path, k)] = string(v)
			return nil
		})
	}
	must(tb, db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error { return walk(string(name), b) })
	}))
	return recs, seqs
}

// RecordKey names a record: its bucket's path ("emitted/run-1") and key.
func RecordKey(bucket string, key []byte) string { return bucket + " " + hex.EncodeToString(key) }

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func err2[T any](_ T, err error) error { return err }
