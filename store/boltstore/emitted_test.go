package boltstore_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/boltstore"
)

// TestEmitted_DamagedBucket: a run's name holding a value where spyder
// keeps one bucket per run is reported when the seen set is opened, naming
// the file, instead of failing every batch of that run.
func TestEmitted_DamagedBucket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spyder.db")
	s := mustOpenAt(t, path, boltstore.Options{})
	if _, err := s.Emitted(); err != nil {
		t.Fatalf("Emitted(): %v", err)
	}
	err := s.DB().Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("emitted")).Put([]byte("run"), []byte("x"))
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Emitted()
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("Emitted() on a damaged bucket = %v; want an error naming %s and the damage", err, path)
	}
}

// TestEmitted_KeysOfARun: a run's keys are 8-byte prints; a run an older
// spyder began, keyed by 16-byte hashes, goes on with them, so that what it
// emitted before the upgrade is still seen.
func TestEmitted_KeysOfARun(t *testing.T) {
	ctx := t.Context()
	s := mustOpenAt(t, filepath.Join(t.TempDir(), "spyder.db"), boltstore.Options{})
	e, err := s.Emitted()
	if err != nil {
		t.Fatal(err)
	}
	old := store.KeyHash("before")
	err = s.DB().Update(func(tx *bbolt.Tx) error {
		b, err := tx.Bucket([]byte("emitted")).CreateBucket([]byte("old"))
		if err != nil {
			return err
		}
		return b.Put(old[:], nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"old", "new"} {
		if err := e.Mark(ctx, run, []string{"after"}); err != nil {
			t.Fatal(err)
		}
	}
	if seen, err := e.Seen(ctx, "old", []string{"before", "after", "never"}); err != nil || !seen[0] || !seen[1] || seen[2] {
		t.Errorf("Seen(old run) = %v, %v; want before and after seen", seen, err)
	}
	lengths := map[string][]int{}
	err = s.DB().View(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("emitted")).ForEachBucket(func(run []byte) error {
			return tx.Bucket([]byte("emitted")).Bucket(run).ForEach(func(k, _ []byte) error {
				lengths[string(run)] = append(lengths[string(run)], len(k))
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lengths["old"], []int{16, 16}) || !slices.Equal(lengths["new"], []int{8}) {
		t.Errorf("key lengths by run = %v, want old 16 and 16, new 8", lengths)
	}
}
