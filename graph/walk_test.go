package graph

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/graph/graphtest"
)

// kinds is a visitor that notes the kind of each thing visited, in order.
type kinds struct{ seen []byte }

func (k *kinds) node(Node) error                   { k.seen = append(k.seen, 'n'); return nil }
func (k *kinds) edge(*spyder.Edge) error           { k.seen = append(k.seen, 'e'); return nil }
func (k *kinds) outcome(*spyder.HostOutcome) error { k.seen = append(k.seen, 'o'); return nil }

// nodesAndEdges is kinds without the outcomes.
type nodesAndEdges struct {
	noOutcomes
	seen []byte
}

func (k *nodesAndEdges) node(Node) error         { k.seen = append(k.seen, 'n'); return nil }
func (k *nodesAndEdges) edge(*spyder.Edge) error { k.seen = append(k.seen, 'e'); return nil }

// TestWalk_NodesThenEdgesThenOutcomes: whether the sort holds it all or
// spills, the walk visits every node before any edge, and every edge
// before any outcome, though the input interleaves them (and an edges
// file names nodes only as edge ends).
func TestWalk_NodesThenEdgesThenOutcomes(t *testing.T) {
	batch := synthFile(t, "batch.jsonl", graphtest.Options{Hosts: 300, BatchSize: 7})
	edges := synthFile(t, "edges.jsonl", graphtest.Options{Hosts: 300, Start: 200, Edges: true})
	check := func(t *testing.T) {
		k := &kinds{}
		if err := walk(&Reader{}, []string{batch, edges}, k); err != nil {
			t.Fatal(err)
		}
		for _, c := range []byte("neo") {
			if !bytes.Contains(k.seen, []byte{c}) {
				t.Fatalf("no %c visited", c)
			}
		}
		if !slices.IsSortedFunc(k.seen, func(a, b byte) int { return strings.Index("neo", string(a)) - strings.Index("neo", string(b)) }) {
			i := bytes.Index(k.seen, []byte("e"))
			t.Errorf("visited out of order: a node or outcome after an edge, or an edge after an outcome (from the first edge: %.40s)", k.seen[i:])
		}
	}
	t.Run("memory", check)
	lowMemory(t, 4<<10)
	t.Run("spilled", check)
}

// TestWalk_OutcomesOnlyWhenWanted: a visitor embedding noOutcomes gets no
// outcome records in the sort; one that reads outcomes gets each.
func TestWalk_OutcomesOnlyWhenWanted(t *testing.T) {
	b := &spyder.Batch{
		NodesDomain: []spyder.DomainNode{{Host: "a.example"}},
		Edges:       []spyder.Edge{{Type: spyder.ResolvesTo, Source: "a.example", Target: "192.0.2.1"}},
		Outcomes: []spyder.HostOutcome{{Host: "a.example", Steps: []spyder.StepOutcome{{Step: spyder.StepPage, Status: spyder.StatusOK}}},
			{Host: "b.example", Steps: []spyder.StepOutcome{{Step: spyder.StepDNS, Status: spyder.StatusTimeout}}}},
	}
	probes := func(w *walker) int {
		h, n := half{w.s.arena, w.s.recs}, 0
		for i := range h.recs {
			if h.rec(i)[0] == recProbe {
				n++
			}
		}
		return n
	}
	ne := &nodesAndEdges{}
	w := newWalker(ne)
	if err := w.batch(b); err != nil {
		t.Fatal(err)
	}
	if n := probes(w); n != 0 {
		t.Errorf("%d outcome records sorted for a visitor that ignores them", n)
	}
	if err := w.finish(); err != nil {
		t.Fatal(err)
	}
	if string(ne.seen) != "nne" {
		t.Errorf("visited %q, want nne", ne.seen)
	}
	k := &kinds{}
	w = newWalker(k)
	if err := w.batch(b); err != nil {
		t.Fatal(err)
	}
	if n := probes(w); n != 2 {
		t.Errorf("%d outcome records sorted for a visitor that reads them, want 2", n)
	}
	if err := w.finish(); err != nil {
		t.Fatal(err)
	}
	if string(k.seen) != "nneoo" {
		t.Errorf("visited %q, want nneoo", k.seen)
	}
}

// TestExportGEXF_NodesThenEdges: the GEXF export, spilled or not, is XML
// whose graph holds its nodes, then its edges, each element in its list;
// a node after an edge is an error, not a broken document.
func TestExportGEXF_NodesThenEdges(t *testing.T) {
	batch := synthFile(t, "batch.jsonl", graphtest.Options{Hosts: 300, BatchSize: 7})
	s, err := Summarize(&Reader{}, []string{batch}, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantNodes, wantEdges := 0, 0
	for _, n := range s.Nodes {
		wantNodes += n
	}
	for _, n := range s.Edges {
		wantEdges += n
	}
	check := func(t *testing.T) {
		var out bytes.Buffer
		if err := Export(&Reader{}, []string{batch}, "gexf", &out); err != nil {
			t.Fatal(err)
		}
		var path, lists []string // open elements; graph's children
		count := map[string]int{}
		d := xml.NewDecoder(&out)
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("not XML: %v", err)
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				name := tok.Name.Local
				if len(path) > 0 && path[len(path)-1] == "graph" {
					lists = append(lists, name)
				}
				if name == "node" || name == "edge" {
					if parent := path[len(path)-1]; parent != name+"s" {
						t.Fatalf("a %s in %s", name, parent)
					}
					count[name]++
				}
				path = append(path, name)
			case xml.EndElement:
				path = path[:len(path)-1]
			}
		}
		if want := []string{"attributes", "attributes", "nodes", "edges"}; !slices.Equal(lists, want) {
			t.Errorf("graph holds %v, want %v", lists, want)
		}
		if count["node"] != wantNodes || count["edge"] != wantEdges {
			t.Errorf("%d nodes, %d edges; want %d and %d", count["node"], count["edge"], wantNodes, wantEdges)
		}
	}
	t.Run("memory", check)
	lowMemory(t, 4<<10)
	t.Run("spilled", check)

	var buf bytes.Buffer
	g := newGEXF(bufio.NewWriter(&buf))
	if err := g.node(Node{Type: TypeDomain, ID: "a.example"}); err != nil {
		t.Fatal(err)
	}
	if err := g.edge(&spyder.Edge{Type: spyder.ResolvesTo, Source: "a.example", Target: "192.0.2.1"}); err != nil {
		t.Fatal(err)
	}
	if err := g.node(Node{Type: TypeIP, ID: "192.0.2.1"}); err == nil {
		t.Error("gexf took a node after an edge")
	}
	var empty bytes.Buffer
	ew := bufio.NewWriter(&empty)
	g = newGEXF(ew)
	if err := errors.Join(g.close(), ew.Flush()); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(empty.Bytes(), new(struct{})); err != nil || !strings.Contains(empty.String(), "<nodes>\n</nodes>\n<edges>\n</edges>") {
		t.Errorf("empty GEXF: %v\n%s", err, empty.String())
	}
}
