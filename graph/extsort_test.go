package graph

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/graph/graphtest"
)

// lowMemory makes the sorters spill after a few KiB for the test.
func lowMemory(t *testing.T, n int) {
	old := SortMemory
	SortMemory = n
	t.Cleanup(func() { SortMemory = old })
}

// TestSorter_SpillsAndMerges: with room for a few records only, the
// sorter writes over a hundred run files, merges them in groups, gives
// every record back in byte order, duplicates included, and leaves no
// file behind.
func TestSorter_SpillsAndMerges(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	lowMemory(t, 1<<10)
	s := newSorter()
	var want [][]byte
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		rec := fmt.Appendf(nil, "k%05d/%d", rng.IntN(5000), i%3)
		want = append(want, rec)
		if err := s.add(rec); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.runs) <= maxFanIn {
		t.Fatalf("%d runs; the test wants more than %d", len(s.runs), maxFanIn)
	}
	slices.SortFunc(want, bytes.Compare)
	var got [][]byte
	if err := s.each(func(rec []byte) error { got = append(got, slices.Clone(rec)); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Errorf("got %d records, want %d, in order", len(got), len(want))
	}
	if left, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestWalk_SpilledAsInMemory: summary, every stream export and diff of a
// crawl are the same whether the sorters hold it all or spill it every few
// KiB.
func TestWalk_SpilledAsInMemory(t *testing.T) {
	var b strings.Builder
	if err := graphtest.Write(&b, graphtest.Options{Hosts: 600, BatchSize: 7}); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "crawl.jsonl")
	if err := os.WriteFile(in, []byte(b.String()+b.String()), 0o644); err != nil { // every record twice
		t.Fatal(err)
	}
	var c strings.Builder
	if err := graphtest.Write(&c, graphtest.Options{Hosts: 600, BatchSize: 5, Start: 100}); err != nil {
		t.Fatal(err)
	}
	shifted := filepath.Join(t.TempDir(), "shifted.jsonl")
	if err := os.WriteFile(shifted, []byte(c.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (*Summary, map[string]string) {
		s, err := Summarize(&Reader{}, []string{in}, 5)
		if err != nil {
			t.Fatal(err)
		}
		s.Problems = nil
		out := map[string]string{}
		for _, f := range []string{"graphml", "gexf", "dot", "csv"} {
			var buf bytes.Buffer
			if err := Export(&Reader{}, []string{in}, f, &buf); err != nil {
				t.Fatal(err)
			}
			out[f] = buf.String()
		}
		var diff bytes.Buffer
		if _, err := Diff(&Reader{}, Side{Names: []string{in}}, Side{Names: []string{shifted}}, &diff); err != nil {
			t.Fatal(err)
		}
		out["diff"] = diff.String()
		return s, out
	}
	s1, x1 := run()
	lowMemory(t, 4<<10)
	before := runFiles.Load()
	s2, x2 := run()
	if spilled := runFiles.Load() - before; spilled < 10 {
		t.Fatalf("%d run files written with 4 KiB to sort in; the test wants the sorters to spill", spilled)
	}
	if d := gocmp.Diff(s1, s2); d != "" {
		t.Errorf("summary differs when spilled (-memory +spilled):\n%s", d)
	}
	for f := range x1 {
		if x1[f] != x2[f] {
			t.Errorf("%s export differs when spilled", f)
		}
	}
	if !strings.Contains(x1["diff"], `"change":"added"`) || !strings.Contains(x1["diff"], `"change":"removed"`) {
		t.Errorf("diff of shifted crawls: %.300s", x1["diff"])
	}
	probed := 0
	for _, n := range s1.Outcomes {
		probed += n
	}
	if probed != 600 {
		t.Errorf("outcomes = %v, %d hosts; want 600 (each host once)", s1.Outcomes, probed)
	}
	if s1.Edges["RESOLVES_TO"] != 600 {
		t.Errorf("RESOLVES_TO = %d, want 600 (each edge once)", s1.Edges["RESOLVES_TO"])
	}
}
