package boltstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"spyder/crawl"
	"spyder/crawl/emittedtest"
	"spyder/store/boltstore"
)

func TestEmitted_Conformance(t *testing.T) {
	emittedtest.Run(t, func(t *testing.T) crawl.Emitted {
		db, err := bbolt.Open(filepath.Join(t.TempDir(), "emitted.db"), 0o600,
			&bbolt.Options{Timeout: time.Second, NoSync: true})
		if err != nil {
			t.Fatalf("bbolt.Open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		e, err := boltstore.NewEmitted(db)
		if err != nil {
			t.Fatalf("NewEmitted: %v", err)
		}
		return e
	})
}

// TestEmitted_SurvivesReopen checks that what a run emitted is remembered
// when the file is opened again, as a resumed crawl needs.
func TestEmitted_SurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "emitted.db")
	open := func() (*bbolt.DB, *boltstore.Emitted) {
		db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatalf("bbolt.Open: %v", err)
		}
		e, err := boltstore.NewEmitted(db)
		if err != nil {
			t.Fatalf("NewEmitted: %v", err)
		}
		return db, e
	}
	db, e := open()
	if err := e.Mark(t.Context(), "run", []string{"a"}); err != nil {
		t.Fatalf("Mark: %v", err)
	}
	db.Close()
	db, e = open()
	defer db.Close()
	got, err := e.Seen(t.Context(), "run", []string{"a", "b"})
	if err != nil {
		t.Fatalf("Seen: %v", err)
	}
	if !got[0] || got[1] {
		t.Errorf("Seen(a, b) after reopen = %v, want [true false]", got)
	}
}
