package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/boltstore/bolttest"
)

// TestOpen_DamagedFile opens files truncated at several offsets and with
// bytes overwritten in the meta, freelist, branch and leaf pages: each is
// refused with one line naming the file (ErrDamaged), and left as it was.
func TestOpen_DamagedFile(t *testing.T) {
	t.Parallel()
	for _, c := range bolttest.MustCases(t, t.TempDir()) {
		t.Run(c.Name, func(t *testing.T) {
			before, _ := os.ReadFile(c.Damaged)
			s, err := boltstore.Open(c.Damaged, boltstore.Options{})
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) = nil error, want ErrDamaged", c.Name)
			}
			if !errors.Is(err, boltstore.ErrDamaged) || !strings.Contains(err.Error(), c.Damaged) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Open() error = %q, want one line matching ErrDamaged naming %s", err, c.Damaged)
			}
			if after, _ := os.ReadFile(c.Damaged); !bytes.Equal(before, after) {
				t.Errorf("Open() changed the damaged file")
			}
		})
	}
}

// TestSalvage_DamagedFile salvages each damaged file: the copy holds every
// record of the undamaged file not reached through a damaged page or
// element, with its value, and nothing else; the buckets keep their
// sequences; the report names the damaged pages; and the copy opens as a
// store whose sizes are what was copied.
func TestSalvage_DamagedFile(t *testing.T) {
	t.Parallel()
	for _, c := range bolttest.MustCases(t, t.TempDir()) {
		t.Run(c.Name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "salvaged.db")
			rep, err := boltstore.Salvage(c.Damaged, dst)
			if err != nil {
				t.Fatalf("Salvage() error: %v", err)
			}
			CheckSalvaged(t, c, dst)
			if len(rep.Lost) == 0 {
				t.Errorf("Salvage() reported nothing lost, want the damage")
			}
			named := false
			for _, l := range rep.Lost {
				named = named || l.Page == c.Touched
			}
			if !named {
				t.Errorf("Salvage() lost %v, want one of them to name page %d (-1: the file)", rep.Lost, c.Touched)
			}
			base, _ := bolttest.Records(t, c.Base)
			for _, b := range rep.Buckets {
				if b.Counted >= 0 && b.Counted != int64(bolttest.CountBucket(base, b.Name)) {
					t.Errorf("report: bucket %s counted %d, want the %d the file held", b.Name, b.Counted, bolttest.CountBucket(base, b.Name))
				}
			}
		})
	}
}

// CheckSalvaged checks the salvaged copy dst of case c: it holds the
// records the case says must survive, and opens as a store whose sizes
// are those of what was copied.
func CheckSalvaged(t *testing.T, c bolttest.Case, dst string) {
	t.Helper()
	bolttest.MustMatch(t, c, dst)
	got, _ := bolttest.Records(t, dst)
	s, err := boltstore.Open(dst, boltstore.Options{})
	if err != nil {
		t.Fatalf("Open(salvaged copy) error: %v", err)
	}
	defer s.Close()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := func(b string) int64 { return int64(bolttest.CountBucket(got, b)) }
	want := queue.Stats{Pending: n("pending"), Processing: n("processing"), Dead: n("dead"), Seen: n("seen"), OldestLeaseAge: st.OldestLeaseAge}
	if st != want {
		t.Errorf("salvaged copy Stats() = %+v, want the records copied %+v", st, want)
	}
}

// TestSalvage_UndamagedFile copies a sound file whole, reporting nothing
// lost.
func TestSalvage_UndamagedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := bolttest.Case{Name: "undamaged", Base: bolttest.MustFixture(t, dir), LostPages: map[uint64]bool{}}
	c.Damaged, c.Layout = c.Base, bolttest.MustLayout(t, c.Base)
	dst := filepath.Join(dir, "copy.db")
	rep, err := boltstore.Salvage(c.Base, dst)
	if err != nil || len(rep.Lost) > 0 {
		t.Fatalf("Salvage(undamaged) = %v lost, error %v; want nothing lost", rep.Lost, err)
	}
	CheckSalvaged(t, c, dst)
}

// TestSalvage_Refuses refuses to overwrite an existing file, to write over
// the file it reads, and to read a file another process holds open; none
// of them changes a file.
func TestSalvage_Refuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := bolttest.MustFixture(t, dir)
	exists := filepath.Join(dir, "exists.db")
	if err := os.WriteFile(exists, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(src)
	for name, dst := range map[string]string{"Exists": exists, "Same": src, "SameOtherName": filepath.Join(dir, ".", "fixture.db")} {
		if _, err := boltstore.Salvage(src, dst); err == nil || !strings.Contains(err.Error(), dst) {
			t.Errorf("%s: Salvage(%s, %s) error = %v, want a refusal naming %s", name, src, dst, err, dst)
		}
	}
	if got, _ := os.ReadFile(exists); string(got) != "keep me" {
		t.Errorf("Salvage() overwrote an existing file")
	}
	if after, _ := os.ReadFile(src); !bytes.Equal(before, after) {
		t.Errorf("Salvage() changed the file it read")
	}
	s, err := boltstore.Open(src, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dst := filepath.Join(dir, "new.db")
	if _, err := boltstore.Salvage(src, dst); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Salvage(open file) error = %v, want it in use", err)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Errorf("Salvage(open file) left %s behind", dst)
	}
}

// TestOpen_RandomDamage overwrites random bytes of the pages in use and
// opens, reads and salvages the result: whatever the damage, no call
// panics or faults (which would end the test binary), Open either refuses
// it with ErrDamaged or gives a store whose state can be read, and Salvage
// writes a file that opens.
func TestOpen_RandomDamage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := bolttest.MustFixture(t, dir)
	orig, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	l := bolttest.MustLayout(t, base)
	used := int(l.Meta().HWM) * l.PageSize
	rng := rand.New(rand.NewPCG(7, 11))
	refused := 0
	for i := range 30 {
		b := bytes.Clone(orig)
		for range 1 + rng.IntN(4) {
			page := rng.IntN(used / l.PageSize)
			off := page*l.PageSize + rng.IntN(64) // headers and first elements, where structure lives
			b[off] ^= byte(1 + rng.IntN(255))
		}
		path := filepath.Join(dir, "random.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "random-salvaged.db")
		os.Remove(dst)
		if _, err := boltstore.Salvage(path, dst); err != nil && !errors.Is(err, boltstore.ErrDamaged) {
			t.Errorf("try %d: Salvage() error: %v", i, err)
		}
		s, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			if !errors.Is(err, boltstore.ErrDamaged) {
				t.Errorf("try %d: Open() error = %v, want ErrDamaged", i, err)
			}
			refused++
			continue
		}
		if err := s.Dump(context.Background(), func(queue.Record) error { return nil }); err != nil {
			t.Errorf("try %d: Dump() of an accepted file: %v", i, err)
		}
		s.Close()
	}
	if refused == 0 {
		t.Errorf("Open() accepted every damaged file; want most refused")
	}
}
