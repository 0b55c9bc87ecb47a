package tables_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/tables"
)

func batch(i, edges int) *spyder.Batch {
	b := &spyder.Batch{ProbeID: "p", RunID: "r", BatchID: fmt.Sprint("b", i), Timestamp: 1,
		NodesDomain: []spyder.DomainNode{{Host: host.Name(fmt.Sprintf("h%d.example", i)), Apex: "example"}}}
	for k := range edges {
		b.Edges = append(b.Edges, spyder.Edge{Type: spyder.LinksTo, Source: fmt.Sprintf("h%d.example", i), Target: fmt.Sprintf("t%d.example", k)})
	}
	return b
}

// rows is the row count of a Parquet file, read by parquet-go.
func rows(t *testing.T, path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pf.NumRows()
}

// TestWriter_PartsRollAndAppearWhole: a part ends when a table reaches
// PartRows, every table gets a file per part, the files appear only once
// complete, and an aborted part leaves nothing.
func TestWriter_PartsRollAndAppearWhole(t *testing.T) {
	dir := t.TempDir()
	w, err := tables.NewWriter(dir, "x", tables.Options{PartRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // 4 edges each: the third batch makes 12 edges
		if err := w.Add(batch(i, 4)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Add(batch(3, 1)); err != nil { // the second part, open
		t.Fatal(err)
	}
	visible, _ := filepath.Glob(filepath.Join(dir, "*", "*.parquet"))
	if len(visible) != 5 {
		t.Fatalf("with the second part open: %v; want only the first part's 5 files", visible)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := w.Written()
	want := []string{}
	for _, seq := range []string{"x-000000", "x-000001"} {
		for _, tab := range tables.Names {
			want = append(want, filepath.Join(dir, tab, seq+".parquet"))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("written %v, want %v", got, want)
	}
	if n := rows(t, filepath.Join(dir, tables.Edges, "x-000000.parquet")); n != 12 {
		t.Errorf("first part's edges: %d rows, want 12", n)
	}
	if n := rows(t, filepath.Join(dir, tables.Domains, "x-000001.parquet")); n != 1 {
		t.Errorf("second part's domains: %d rows, want 1", n)
	}
	w2, _ := tables.NewWriter(dir, "y", tables.Options{})
	w2.Add(batch(9, 1))
	w2.Abort()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "y-")) {
			t.Errorf("the aborted part left %s", path)
		}
		return nil
	})
}

// convertOnce writes batches 0..4 with prefix "j" under dir, as a
// journal's conversion does (two parts: 12 edges, then 8), and returns
// the part files written.
func convertOnce(t *testing.T, dir string) []string {
	t.Helper()
	w, err := tables.NewWriter(dir, "j", tables.Options{PartRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := w.Add(batch(i, 4)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.Written()
}

// partRows maps every file under dir to its row count.
func partRows(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			got[path] = rows(t, path)
		}
		return nil
	})
	return got
}

// TestWriter_SameInputTwiceLeavesItOnce: converting the same batches with
// the same prefix again, as the next run does with a journal whose run
// was killed after its parts were renamed into place but before it was
// removed, leaves the same files with the same rows: no row twice.
func TestWriter_SameInputTwiceLeavesItOnce(t *testing.T) {
	dir := t.TempDir()
	first := convertOnce(t, dir)
	before := partRows(t, dir)
	second := convertOnce(t, dir)
	if !slices.Equal(first, second) {
		t.Errorf("second conversion wrote %v, the first %v", second, first)
	}
	after := partRows(t, dir)
	if len(after) != len(before) || len(before) != 2*len(tables.Names) {
		t.Fatalf("files after the second conversion: %v; after the first: %v (want 2 parts of %d tables)", after, before, len(tables.Names))
	}
	var edges int64
	for path, n := range before {
		if after[path] != n {
			t.Errorf("%s: %d rows after the second conversion, %d after the first", path, after[path], n)
		}
		if filepath.Base(filepath.Dir(path)) == tables.Edges {
			edges += n
		}
	}
	if edges != 20 {
		t.Errorf("edges: %d rows, want the batches' 20", edges)
	}
}
