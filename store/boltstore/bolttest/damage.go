package bolttest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Case is one damaged copy of a fixture.
type Case struct {
	Name    string
	Base    string // the undamaged file
	Damaged string // the damaged copy
	Layout  *Layout
	// LostPages are the pages the damage makes unreadable (a page whose
	// parent no longer points to it included), LostElems the single
	// elements; records reached through either are lost.
	LostPages map[uint64]bool
	LostElems map[Elem]bool
	// Touched is the page whose bytes the damage changed (0 or 1 for a
	// meta page), or -1 for a truncation.
	Touched int64
}

// Lost reports whether the damage makes record (a RecordKey) unreadable.
func (c Case) Lost(record string) bool {
	if c.LostElems[c.Layout.At[record]] {
		return true
	}
	for _, id := range c.Layout.Through[record] {
		if c.LostPages[id] {
			return true
		}
	}
	return false
}

// Want returns the records of the undamaged file that a salvage of the
// damaged copy must recover (all that are not Lost), leaving out the
// queue's kept sizes, which a salvage recounts.
func (c Case) Want(tb testing.TB) map[string]string {
	tb.Helper()
	recs, _ := Records(tb, c.Base)
	for k := range recs {
		if c.Lost(k) || strings.HasPrefix(k, "queue-meta ") {
			delete(recs, k)
		}
	}
	return recs
}

// MustCases builds the fixtures in dir (one as spyder writes it, with no
// freelist page, and one with a freelist page, as bbolt writes by default)
// and damaged copies of them: truncated at several offsets, and bytes
// overwritten in each meta page, the freelist page, a branch page (its
// type, and the child page of one element) and leaf pages (the header's
// page ID and element count, and one element's offset).
func MustCases(tb testing.TB, dir string) []Case {
	tb.Helper()
	base := MustFixture(tb, dir)
	withFL := filepath.Join(dir, "freelist.db")
	mustCopy(tb, base, withFL)
	MustNoopCommit(tb, withFL, true)
	l, lf := MustLayout(tb, base), MustLayout(tb, withFL)
	if len(l.Children) == 0 || lf.Meta().Freelist == ^uint64(0) {
		tb.Fatalf("fixture has %d branch pages and freelist page %d; want both", len(l.Children), lf.Meta().Freelist)
	}
	var cases []Case
	add := func(name, from string, l *Layout, touched int64, damage func(f *os.File) error, lostPages []uint64, lostElems ...Elem) {
		c := Case{Name: name, Base: from, Damaged: filepath.Join(dir, name+".db"), Layout: l,
			LostPages: map[uint64]bool{}, LostElems: map[Elem]bool{}, Touched: touched}
		for _, p := range lostPages {
			c.LostPages[p] = true
		}
		for _, e := range lostElems {
			c.LostElems[e] = true
		}
		mustCopy(tb, from, c.Damaged)
		f, err := os.OpenFile(c.Damaged, os.O_RDWR, 0)
		must(tb, err)
		defer f.Close()
		must(tb, damage(f))
		cases = append(cases, c)
	}
	ps := int64(l.PageSize)
	used := int64(l.Meta().HWM) * ps // the file may be longer
	for _, size := range []int64{16 << 10, 40_000, 100_000, used / 2, used - ps} {
		var lost []uint64
		for id, over := range l.Overflow {
			if (int64(id)+int64(over)+1)*ps > size {
				lost = append(lost, id)
			}
		}
		add(fmt.Sprintf("truncated-%d", size), base, l, -1, func(f *os.File) error { return f.Truncate(size) }, lost)
	}
	for i := range 2 {
		add(fmt.Sprintf("meta-%d", i), base, l, int64(i), flip(int64(i)*ps+16+16), nil)
	}
	fl := lf.Meta().Freelist
	add("freelist-type", withFL, lf, int64(fl), flip(int64(fl)*ps+8), nil)
	add("freelist-lists-root", withFL, lf, int64(fl), put64(int64(fl)*ps+16, lf.Meta().Root), nil)

	br, _ := l.pageOf("pending", 0x01, 0)
	kids := l.Children[br]
	add("branch-type", base, l, int64(br), flip(int64(br)*ps+8), []uint64{br})
	add("branch-child-outside", base, l, int64(br), put64(int64(br)*ps+16+16+8, l.Meta().HWM+1000), []uint64{kids[1]})
	add("branch-child-twice", base, l, int64(br), put64(int64(br)*ps+16+16+8, kids[0]), []uint64{kids[1]})

	seen := l.Leaves["seen"]
	lf1, lf2, lf3 := seen[len(seen)/4], seen[len(seen)/2], seen[3*len(seen)/4]
	add("leaf-page-id", base, l, int64(lf1), flip(int64(lf1)*ps), []uint64{lf1})
	add("leaf-count", base, l, int64(lf2), put16(int64(lf2)*ps+10, 0xFFFF), []uint64{lf2})
	add("leaf-element", base, l, int64(lf3), put32(int64(lf3)*ps+16+3*16+4, 0xFFFFFF00), nil, Elem{Page: lf3, Index: 3})
	return cases
}

// flip inverts the byte at off.
func flip(off int64) func(*os.File) error {
	return func(f *os.File) error {
		b := make([]byte, 1)
		if _, err := f.ReadAt(b, off); err != nil {
			return err
		}
		b[0] ^= 0xFF
		_, err := f.WriteAt(b, off)
		return err
	}
}

func put64(off int64, v uint64) func(*os.File) error { return write(off, ne.AppendUint64(nil, v)) }
func put32(off int64, v uint32) func(*os.File) error { return write(off, ne.AppendUint32(nil, v)) }
func put16(off int64, v uint16) func(*os.File) error { return write(off, ne.AppendUint16(nil, v)) }

func write(off int64, b []byte) func(*os.File) error {
	return func(f *os.File) error {
		_, err := f.WriteAt(b, off)
		return err
	}
}

func mustCopy(tb testing.TB, from, to string) {
	tb.Helper()
	b, err := os.ReadFile(from)
	must(tb, err)
	must(tb, os.WriteFile(to, b, 0o600))
}

// MustMatch fails tb unless the salvaged copy dst of case c holds every
// record c wants, with its value, and no record the undamaged file did not
// hold; and unless every bucket with records kept its sequence.
func MustMatch(tb testing.TB, c Case, dst string) {
	tb.Helper()
	want := c.Want(tb)
	got, seqs := Records(tb, dst)
	base, baseSeqs := Records(tb, c.Base)
	var missing, invented []string
	for k, v := range want {
		if w, ok := got[k]; !ok || w != v {
			missing = append(missing, k)
		}
	}
	for k, v := range got {
		if bv, ok := base[k]; (!ok || bv != v) && !strings.HasPrefix(k, "queue-meta ") {
			invented = append(invented, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(invented)
	if len(missing) > 0 {
		tb.Errorf("salvaged copy misses %d of %d readable records, e.g. %v", len(missing), len(want), missing[:min(3, len(missing))])
	}
	if len(invented) > 0 {
		tb.Errorf("salvaged copy holds %d records the file did not, e.g. %v", len(invented), invented[:min(3, len(invented))])
	}
	for b, seq := range seqs {
		if CountBucket(got, b) > 0 && seq != baseSeqs[b] {
			tb.Errorf("bucket %s sequence = %d, want %d", b, seq, baseSeqs[b])
		}
	}
}

// CountBucket counts the records of bucket in recs, not those of its
// nested buckets.
func CountBucket(recs map[string]string, bucket string) int {
	n := 0
	for k := range recs {
		if strings.HasPrefix(k, bucket+" ") {
			n++
		}
	}
	return n
}
