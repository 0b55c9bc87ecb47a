package boltstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/store/boltstore"
)

// TestLocal_SecondOpenRefusedNamingOwner: a probe directory is one
// process's: a second open waits only the short lock timeout and is
// refused with an error naming the holder as the holder described itself.
func TestLocal_SecondOpenRefusedNamingOwner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	l, err := boltstore.OpenLocal(dir, "pid 42, probe p1 on host-a", boltstore.Options{})
	if err != nil {
		t.Fatalf("OpenLocal: %v", err)
	}
	start := time.Now()
	_, err = boltstore.OpenLocal(dir, "pid 43, probe p2 on host-a", boltstore.Options{})
	var locked *boltstore.LockedError
	if !errors.As(err, &locked) || locked.Owner != "pid 42, probe p1 on host-a" || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second OpenLocal = %v, want a LockedError naming %s and pid 42", err, dir)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("second OpenLocal took %v to be refused, want a short timeout", d)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "probe.owner")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("owner file after Close: %v, want it removed", err)
	}
	l2, err := boltstore.OpenLocal(dir, "pid 43", boltstore.Options{})
	if err != nil {
		t.Fatalf("OpenLocal after the first closed: %v", err)
	}
	l2.Close()
}

// TestLocal_KeepsBothFIFOsAcrossReopen: the spool and the held writes are
// two FIFOs of their own, and what they hold is there for the next
// process that opens the directory.
func TestLocal_KeepsBothFIFOsAcrossReopen(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	l, err := boltstore.OpenLocal(dir, "first", boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"batch-1", "batch-2"} {
		if err := l.Spool().Put(ctx, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Held().Put(ctx, []byte(`{"seed":["a.com"]}`)); err != nil {
		t.Fatal(err)
	}
	l.Close()

	l, err = boltstore.OpenLocal(dir, "second", boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if sp, held, err := l.Counts(ctx); err != nil || sp != 2 || held != 1 {
		t.Fatalf("Counts after reopen = %d, %d, %v; want 2, 1", sp, held, err)
	}
	_, first, _ := l.Spool().Peek(ctx)
	_, h, _ := l.Held().Peek(ctx)
	if string(first) != "batch-1" || string(h) != `{"seed":["a.com"]}` {
		t.Errorf("oldest spooled %q, held %q; want batch-1 and the seed", first, h)
	}
}
