package graph

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/graph/graphtest"
)

// The summary's counts and rankings are those of the graph read whole.
func TestSummarize_MatchesTheGraph(t *testing.T) {
	batch := synthFile(t, "batch.jsonl", graphtest.Options{Hosts: 3000})
	edges := synthFile(t, "edges.jsonl", graphtest.Options{Hosts: 3000, Start: 1500, Edges: true})
	m := loadModel(t, batch, edges)
	r := &Reader{}
	s, err := Summarize(r, []string{batch, edges}, 5)
	if err != nil {
		t.Fatal(err)
	}
	wantNodes := map[string]int{}
	for typ, ids := range m.nodes {
		wantNodes[typ] = len(ids)
	}
	if d := gocmp.Diff(wantNodes, s.Nodes); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}
	if d := gocmp.Diff(m.edgeCounts(), s.Edges); d != "" {
		t.Errorf("edges (-want +got):\n%s", d)
	}
	wantOutcomes := map[string]int{}
	for _, o := range m.outcomes {
		wantOutcomes[o]++
	}
	if d := gocmp.Diff(wantOutcomes, s.Outcomes); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	for _, k := range TopKinds {
		want := modelTop(m, k.EdgeType, 5)
		got := slices.Clone(s.Top[k.Key])
		for i := range got {
			got[i].Label = ""
		}
		if d := gocmp.Diff(want, got); d != "" {
			t.Errorf("top %s (-want +got):\n%s", k.Key, d)
		}
	}
	if got := s.Top["ip"][0].Hosts; got < 20 {
		t.Errorf("the synthetic crawl's most shared address has %d hosts; the test wants a real ranking", got)
	}
	if r.Problems.Valid == 0 || len(r.Problems.ByFile) != 0 {
		t.Errorf("problems = %+v, want none", r.Problems)
	}
	var text bytes.Buffer
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shared IP addresses", s.Top["ip"][0].ID, "most-linked domains", s.Top["cert"][0].ID + "  (example"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, text.String())
		}
	}
}

// modelTop ranks the targets of edges of type typ by distinct sources.
func modelTop(m *model, typ string, n int) []Ranked {
	srcs := map[string]map[string]bool{}
	for k := range m.edges {
		if k[0] != typ {
			continue
		}
		if srcs[k[2]] == nil {
			srcs[k[2]] = map[string]bool{}
		}
		srcs[k[2]][k[1]] = true
	}
	var all []Ranked
	for id, s := range srcs {
		all = append(all, Ranked{ID: id, Hosts: len(s)})
	}
	slices.SortFunc(all, func(a, b Ranked) int {
		if c := cmp.Compare(b.Hosts, a.Hosts); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return all[:min(n, len(all))]
}
