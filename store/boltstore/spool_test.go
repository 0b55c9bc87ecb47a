package boltstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"spyder/store/boltstore"
)

func mustSpool(tb testing.TB, path string) (*bbolt.DB, *boltstore.Spool) {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatalf("bbolt.Open: %v", err)
	}
	s, err := boltstore.NewSpool(db)
	if err != nil {
		db.Close()
		tb.Fatalf("NewSpool: %v", err)
	}
	return db, s
}

// TestSpool_FIFOAndReopen checks that entries come back oldest first, byte
// for byte, survive reopening the file, and leave only when removed.
func TestSpool_FIFOAndReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "spool.db")
	db, s := mustSpool(t, path)
	want := [][]byte{[]byte(`{"batch":1}`), {0, 0xff, '\n', 0}, []byte(`{"batch":3}`)}
	for _, d := range want {
		if err := s.Put(ctx, d); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	if n, err := s.Len(ctx); err != nil || n != 3 {
		t.Fatalf("Len() = %d, %v, want 3", n, err)
	}
	db.Close()

	db, s = mustSpool(t, path)
	defer db.Close()
	for i, w := range want {
		id, got, err := s.Peek(ctx)
		if err != nil || id == "" {
			t.Fatalf("Peek #%d = %q, %v, want an entry", i, id, err)
		}
		if string(got) != string(w) {
			t.Fatalf("Peek #%d data = %q, want %q", i, got, w)
		}
		if _, again, _ := s.Peek(ctx); string(again) != string(w) {
			t.Fatalf("second Peek #%d = %q, want the same entry %q", i, again, w)
		}
		if err := s.Remove(ctx, id); err != nil {
			t.Fatalf("Remove(%s): %v", id, err)
		}
		if err := s.Remove(ctx, id); err != nil {
			t.Fatalf("Remove(%s) again = %v, want nil", id, err)
		}
	}
	if id, _, err := s.Peek(ctx); err != nil || id != "" {
		t.Fatalf("Peek on empty spool = %q, %v, want \"\", nil", id, err)
	}
	if n, _ := s.Len(ctx); n != 0 {
		t.Fatalf("Len() = %d, want 0", n)
	}
	if err := s.Remove(ctx, "zz"); err == nil {
		t.Error("Remove(\"zz\") = nil, want an error for a malformed id")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Put(cancelled, []byte("x")); err == nil {
		t.Error("Put with a cancelled ctx = nil, want ctx error")
	}
}
