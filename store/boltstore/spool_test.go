package boltstore_test

import (
	"context"
	"testing"

	"github.com/spyder-crawler/spyder/store/boltstore"
)

// TestSpool_RefusesBadInput: what the shared suite cannot ask of every
// backend: a malformed entry ID and a cancelled ctx are errors, not no-ops.
func TestSpool_RefusesBadInput(t *testing.T) {
	sp, err := MustOpen(t, boltstore.Options{}).Spool()
	if err != nil {
		t.Fatalf("Spool(): %v", err)
	}
	if err := sp.Remove(t.Context(), "zz"); err == nil {
		t.Error("Remove(\"zz\") = nil, want an error for a malformed id")
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	if err := sp.Put(cancelled, []byte("x")); err == nil {
		t.Error("Put with a cancelled ctx = nil, want ctx error")
	}
}
