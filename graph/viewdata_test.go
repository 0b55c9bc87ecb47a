package graph

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/graph/graphtest"
)

// pageData reads the data a view page embeds.
func pageData(t *testing.T, path string) viewData {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const open = `<script id="graph-data" type="application/json">`
	s := string(b)
	i := strings.Index(s, open)
	j := strings.Index(s[i:], "</script>")
	var d viewData
	if i < 0 || j < 0 || json.Unmarshal([]byte(s[i+len(open):i+j]), &d) != nil {
		t.Fatalf("no graph data in %s", path)
	}
	return d
}

// A host's neighbourhood holds exactly the nodes within depth+1 hops (edges
// taken either way), each with its distance, and the edges between them;
// past --max-nodes it is cut and says so.
func TestView_NeighbourhoodData(t *testing.T) {
	batch := synthFile(t, "batch.jsonl", graphtest.Options{Hosts: 400})
	m := loadModel(t, batch)
	const host = "h7.example1.com"
	want := map[string]int{host: 0}
	frontier := []string{host}
	for hop := 1; hop <= 3; hop++ {
		var next []string
		for k := range m.edges {
			for _, pair := range [][2]string{{k[1], k[2]}, {k[2], k[1]}} {
				if _, seen := want[pair[1]]; !seen && contains(frontier, pair[0]) {
					want[pair[1]] = hop
					next = append(next, pair[1])
				}
			}
		}
		frontier = next
	}
	d := pageData(t, writeView(t, []string{batch}, ViewOptions{MaxNodes: 2000, Host: "H7.example1.com.", Depth: 2}))
	got := map[string]int{}
	for _, n := range d.Nodes {
		got[n.ID] = n.Level
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("neighbourhood (-want +got):\n%s", d)
	}
	links := 0
	for k := range m.edges {
		if _, ok := want[k[1]]; ok {
			if _, ok := want[k[2]]; ok {
				links++
			}
		}
	}
	if len(d.Links) != links || d.Meta.Truncated || d.Meta.Host != host {
		t.Errorf("%d links (want %d), meta %+v", len(d.Links), links, d.Meta)
	}
	cut := pageData(t, writeView(t, []string{batch}, ViewOptions{MaxNodes: 5, Host: host, Depth: 2}))
	if len(cut.Nodes) != 5 || !cut.Meta.Truncated || cut.Meta.TotalNodes <= 5 {
		t.Errorf("cut at 5: %d nodes, meta %+v", len(cut.Nodes), cut.Meta)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
