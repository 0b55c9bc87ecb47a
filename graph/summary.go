package graph

import (
	"cmp"
	"slices"

	"github.com/spyder-crawler/spyder"
)

// Summary is what `spyder graph summary` prints: counts by type and the
// most shared infrastructure.
type Summary struct {
	Nodes    map[string]int `json:"nodes"`    // node type → distinct nodes
	Edges    map[string]int `json:"edges"`    // edge type → distinct edges
	Outcomes map[string]int `json:"outcomes"` // how probed hosts' page step ended → hosts
	// Top lists, per kind of shared infrastructure, the targets the most
	// distinct hosts point at, most first: "ip" (RESOLVES_TO), "ns"
	// (USES_NS), "mx" (USES_MX), "cert" (USES_CERT) and "linked"
	// (LINKS_TO: the most-linked domains).
	Top      map[string][]Ranked `json:"top"`
	Problems *Problems           `json:"-"`
}

// Ranked is a node and how many distinct hosts point at it.
type Ranked struct {
	ID    string `json:"id"`
	Label string `json:"label,omitempty"` // a certificate's subject CN
	Hosts int    `json:"hosts"`
}

// TopKinds are the keys of Summary.Top, in the order they are printed,
// with the edge type each ranks by.
var TopKinds = []struct{ Key, EdgeType, Title string }{
	{"ip", spyder.ResolvesTo, "IP addresses"},
	{"ns", spyder.UsesNS, "name servers"},
	{"mx", spyder.UsesMX, "mail hosts"},
	{"cert", spyder.UsesCert, "certificates"},
	{"linked", spyder.LinksTo, "most-linked domains"},
}

// summarizer is the visitor that counts. Since each edge is visited once,
// the count of edges into a target is the count of distinct hosts pointing
// at it.
type summarizer struct {
	s       *Summary
	targets map[string]map[string]int // edge type → target → hosts
	certCN  map[string]string         // SPKI SHA-256 → subject CN
}

func (z *summarizer) node(n Node) error {
	z.s.Nodes[n.Type]++
	if n.Cert != nil {
		z.certCN[n.ID] = n.Cert.SubjectCN
	}
	return nil
}

func (z *summarizer) edge(e *spyder.Edge) error {
	z.s.Edges[e.Type]++
	if m := z.targets[e.Type]; m != nil {
		m[e.Target]++
	}
	return nil
}

// probe counts the host by its page step's outcome, as spyder's
// spyder_hosts_total metric does; a probe without a page step counts by
// its last step.
func (z *summarizer) probe(p *spyder.HostOutcome) error {
	z.s.Outcomes[p.PageOutcome()]++
	return nil
}

// Summarize reads names and returns their summary with the top n of each
// ranking.
func Summarize(r *Reader, names []string, n int) (*Summary, error) {
	s := &Summary{Nodes: map[string]int{}, Edges: map[string]int{}, Outcomes: map[string]int{},
		Top: map[string][]Ranked{}, Problems: &r.Problems}
	z := &summarizer{s: s, targets: map[string]map[string]int{}, certCN: map[string]string{}}
	for _, k := range TopKinds {
		z.targets[k.EdgeType] = map[string]int{}
	}
	if err := walk(r, names, z); err != nil {
		return nil, err
	}
	for _, k := range TopKinds {
		s.Top[k.Key] = top(z.targets[k.EdgeType], n)
	}
	for i, r := range s.Top["cert"] {
		s.Top["cert"][i].Label = z.certCN[r.ID]
	}
	return s, nil
}

// top returns the n entries of counts with the highest counts, ties by ID.
func top(counts map[string]int, n int) []Ranked {
	better := func(a, b Ranked) int {
		if c := cmp.Compare(b.Hosts, a.Hosts); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	}
	out := make([]Ranked, 0, n+1)
	for id, c := range counts {
		r := Ranked{ID: id, Hosts: c}
		if len(out) == n && (n == 0 || better(r, out[n-1]) >= 0) {
			continue
		}
		i, _ := slices.BinarySearchFunc(out, r, better)
		out = slices.Insert(out, i, r)
		if len(out) > n {
			out = out[:n]
		}
	}
	return out
}
