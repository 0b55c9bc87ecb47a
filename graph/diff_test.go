package graph

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/graph/graphtest"
)

// modelKeys lists a model's nodes and edges as the diff names them.
func modelKeys(m *model) map[string]bool {
	k := map[string]bool{}
	for typ, ids := range m.nodes {
		for id := range ids {
			k["node "+typ+" "+id] = true
		}
	}
	for e := range m.edges {
		k["edge "+e[0]+" "+e[1]+" "+e[2]] = true
	}
	return k
}

func changeKey(c Change) string {
	if c.Kind == "node" {
		return "node " + c.Type + " " + c.ID
	}
	return "edge " + c.Type + " " + c.Source + " " + c.Target
}

func runDiff(t *testing.T, r *Reader, old, new Side) (map[string]string, DiffCounts) {
	t.Helper()
	var out bytes.Buffer
	n, err := Diff(r, old, new, &out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var c Change
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("diff line %q: %v", sc.Text(), err)
		}
		if _, dup := got[changeKey(c)]; dup {
			t.Errorf("%s reported twice", changeKey(c))
		}
		got[changeKey(c)] = c.Change
	}
	return got, n
}

func wantDiff(old, new *model) map[string]string {
	o, n := modelKeys(old), modelKeys(new)
	want := map[string]string{}
	for k := range n {
		if !o[k] {
			want[k] = "added"
		}
	}
	for k := range o {
		if !n[k] {
			want[k] = "removed"
		}
	}
	return want
}

// The diff of two overlapping crawls is exactly the set difference of
// their nodes and edges, each way, whatever the formats of the files.
func TestDiff_Files(t *testing.T) {
	old := synthFile(t, "old.jsonl", graphtest.Options{Hosts: 1000})
	new := synthFile(t, "new.jsonl", graphtest.Options{Hosts: 1000, Start: 600, Edges: true})
	want := wantDiff(loadModel(t, old), loadModel(t, new))
	got, n := runDiff(t, &Reader{}, Side{Names: []string{old}}, Side{Names: []string{new}})
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("diff (-want +got):\n%.3000s", d)
	}
	if n.Added+n.Removed != len(want) || n.Added == 0 || n.Removed == 0 {
		t.Errorf("counts %+v for %d changes", n, len(want))
	}
	if got, _ := runDiff(t, &Reader{}, Side{Names: []string{old}}, Side{Names: []string{old}}); len(got) != 0 {
		t.Errorf("a file against itself: %d changes", len(got))
	}
}

// Two runs in the same files compare like two files holding one run each.
func TestDiff_Runs(t *testing.T) {
	a := synthFile(t, "a.jsonl", graphtest.Options{Hosts: 400, Run: "monday"})
	b := synthFile(t, "b.jsonl", graphtest.Options{Hosts: 400, Start: 200, Run: "tuesday"})
	want, _ := runDiff(t, &Reader{}, Side{Names: []string{a}}, Side{Names: []string{b}})
	got, _ := runDiff(t, &Reader{}, Side{Names: []string{a, b}, Run: "monday"}, Side{Names: []string{b, a}, Run: "tuesday"})
	if len(want) == 0 {
		t.Fatal("no changes between the runs; the test needs some")
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("diff by run (-by file +by run):\n%.3000s", d)
	}
}

// A run the files do not hold is an error naming the runs they do, before
// anything is written: a typo would otherwise make the other run's whole
// graph a change.
func TestDiff_MissingRun(t *testing.T) {
	a := synthFile(t, "a.jsonl", graphtest.Options{Hosts: 50, Run: "monday"})
	b := synthFile(t, "b.jsonl", graphtest.Options{Hosts: 50, Start: 20, Run: "tuesday"})
	both := []string{a, b}
	want := `run "wednesday" is in none of the files (runs there: monday, tuesday)`
	for _, sides := range [][2]string{{"wednesday", "tuesday"}, {"monday", "wednesday"}} {
		var out bytes.Buffer
		n, err := Diff(&Reader{}, Side{Names: both, Run: sides[0]}, Side{Names: both, Run: sides[1]}, &out)
		if err == nil || err.Error() != want {
			t.Errorf("diff %s → %s: error %v, want %q", sides[0], sides[1], err, want)
		}
		// The counts, not out, tell: Diff buffers what it writes.
		if n != (DiffCounts{}) || out.Len() != 0 {
			t.Errorf("diff %s → %s wrote %+v (%d bytes), want nothing", sides[0], sides[1], n, out.Len())
		}
	}
}
