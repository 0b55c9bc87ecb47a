package boltstore_test

import (
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

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
