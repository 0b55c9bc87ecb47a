package graph

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

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
// at it: each edge of a ranked type adds its type and target to a sorter,
// where the copies of one target come together to be counted. A
// certificate's subject CN joins them, sorted right after its target's
// copies, to label it.
type summarizer struct {
	s       *Summary
	targets *sorter
	ranked  map[string]bool // edge types ranked
	buf     []byte
}

func (z *summarizer) node(n Node) error {
	z.s.Nodes[n.Type]++
	if n.Cert != nil && z.ranked[spyder.UsesCert] && !strings.ContainsAny(n.ID, "\x00\x01") {
		z.buf = append(append(append(append(z.buf[:0], spyder.UsesCert...), 1), n.ID...), 1)
		return z.targets.add(append(z.buf, n.Cert.SubjectCN...))
	}
	return nil
}

func (z *summarizer) edge(e *spyder.Edge) error {
	z.s.Edges[e.Type]++
	if z.ranked[e.Type] && !strings.ContainsAny(e.Target, "\x00\x01") {
		z.buf = append(append(append(append(z.buf[:0], e.Type...), 1), e.Target...), 0)
		return z.targets.add(z.buf)
	}
	return nil
}

// outcome counts the host by its page step's outcome, as spyder's
// spyder_hosts_total metric does; a visit without a page step counts by
// its last step.
func (z *summarizer) outcome(p *spyder.HostOutcome) error {
	z.s.Outcomes[p.PageOutcome()]++
	return nil
}

// Summarize reads names and returns their summary with the top n of each
// ranking.
func Summarize(r *Reader, names []string, n int) (*Summary, error) {
	s := &Summary{Nodes: map[string]int{}, Edges: map[string]int{}, Outcomes: map[string]int{},
		Top: map[string][]Ranked{}, Problems: &r.Problems}
	z := &summarizer{s: s, targets: newSorter(), ranked: map[string]bool{}}
	defer z.targets.close()
	for _, k := range TopKinds {
		z.ranked[k.EdgeType] = true
	}
	if err := walk(r, names, z); err != nil {
		return nil, err
	}
	tops := map[string]*topN{}
	for _, k := range TopKinds {
		tops[k.EdgeType] = &topN{n: n, out: make([]Ranked, 0, n+1)}
	}
	var cur Ranked
	var curType string
	end := func() {
		if cur.Hosts > 0 {
			tops[curType].add(cur)
		}
	}
	err := z.targets.each(func(rec []byte) error {
		typ, rest, _ := bytes.Cut(rec, []byte{1})
		id, label := rest[:len(rest)-1], ""
		if i := bytes.IndexByte(rest, 1); i >= 0 {
			id, label = rest[:i], string(rest[i+1:])
		}
		if string(typ) != curType || string(id) != cur.ID {
			end()
			curType, cur = string(typ), Ranked{ID: string(id)}
		}
		if label != "" || rest[len(rest)-1] == 1 {
			cur.Label = label
		} else {
			cur.Hosts++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	end()
	for _, k := range TopKinds {
		s.Top[k.Key] = tops[k.EdgeType].out
	}
	return s, nil
}

// topN keeps the n entries with the highest counts, ties by ID.
type topN struct {
	n   int
	out []Ranked
}

func better(a, b Ranked) int {
	if c := cmp.Compare(b.Hosts, a.Hosts); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

func (t *topN) add(r Ranked) {
	if len(t.out) == t.n && (t.n == 0 || better(r, t.out[t.n-1]) >= 0) {
		return
	}
	i, _ := slices.BinarySearchFunc(t.out, r, better)
	t.out = slices.Insert(t.out, i, r)
	if len(t.out) > t.n {
		t.out = t.out[:t.n]
	}
}
