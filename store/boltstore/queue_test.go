package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/storetest"
)

// MustOpen opens a store in a fresh temp dir (fsync off) and closes it at
// cleanup.
func MustOpen(tb testing.TB, o boltstore.Options) *boltstore.Store {
	tb.Helper()
	return mustOpenAt(tb, filepath.Join(tb.TempDir(), "spyder.db"), o)
}

func mustOpenAt(tb testing.TB, path string, o boltstore.Options) *boltstore.Store {
	tb.Helper()
	s, err := boltstore.Open(path, o)
	if err != nil {
		tb.Fatalf("Open() error: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// TestStore_Conformance runs the suite every backend passes. A reopen
// closes the file first: bbolt's lock takes one process at a time.
func TestStore_Conformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) store.Backend { return MustOpen(t, boltstore.Options{NoSync: true}) },
		Reopen: func(t *testing.T, b store.Backend) store.Backend {
			b.Close()
			return mustOpenAt(t, b.Name(), boltstore.Options{NoSync: true})
		},
	})
}
