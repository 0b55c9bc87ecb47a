package boltstore_test

import (
	"path/filepath"
	"testing"

	"spyder/queue"
	"spyder/queue/queuetest"
	"spyder/store/boltstore"
)

// MustOpen opens a store in a fresh temp dir (fsync off) and closes it at
// cleanup.
func MustOpen(tb testing.TB, o boltstore.Options) *boltstore.Store {
	tb.Helper()
	s, err := boltstore.Open(filepath.Join(tb.TempDir(), "spyder.db"), o)
	if err != nil {
		tb.Fatalf("Open() error: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func TestStore_Conformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queue.Queue {
		return MustOpen(t, boltstore.Options{NoSync: true})
	})
}
