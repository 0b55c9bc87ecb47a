package graph

import (
	"hash/maphash"
	"sort"

	"github.com/spyder-crawler/spyder"
)

// Node types.
const (
	TypeDomain = "domain"
	TypeIP     = "ip"
	TypeCert   = "cert"
	TypeAS     = "as" // an autonomous system, "AS<number>"
)

// Node is one node of the graph: its type, its ID (host, address or SPKI
// SHA-256) and, when the input held the node itself and not only edges to
// it, its record (exactly one of Domain, IP, Cert is set then).
type Node struct {
	Type   string
	ID     string
	Domain *spyder.DomainNode
	IP     *spyder.IPNode
	Cert   *spyder.CertNode
}

// TargetType is the type of the node an edge of type edgeType points at.
func TargetType(edgeType string) string {
	switch edgeType {
	case spyder.ResolvesTo:
		return TypeIP
	case spyder.UsesCert:
		return TypeCert
	case spyder.InAS:
		return TypeAS
	}
	return TypeDomain
}

// SourceType is the type of the node an edge of type edgeType starts at:
// an IP for IN_AS, a domain for every other type.
func SourceType(edgeType string) string {
	if edgeType == spyder.InAS {
		return TypeIP
	}
	return TypeDomain
}

// visitor receives the graph from a walk: each node once, each edge once,
// each probed host's outcome once.
type visitor interface {
	node(n Node) error
	edge(e *spyder.Edge) error
	probe(p *spyder.HostOutcome) error
}

// noProbes is embedded by visitors that ignore probe outcomes.
type noProbes struct{}

func (noProbes) probe(*spyder.HostOutcome) error { return nil }

// hashSet holds 64-bit hashes of keys: enough to tell a million nodes apart
// in 8 bytes each (a false "seen" needs a 64-bit collision, odds about 1 in
// 10^7 for ten million keys).
type hashSet map[uint64]struct{}

// add adds h and reports whether it was new, in one probe of the map.
func (s hashSet) add(h uint64) bool {
	n := len(s)
	s[h] = struct{}{}
	return len(s) > n
}

var seed = maphash.MakeSeed()

// keyHash hashes parts joined by NUL, which no host, address or hash holds.
func keyHash(parts ...string) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for i, p := range parts {
		if i > 0 {
			h.WriteByte(0)
		}
		h.WriteString(p)
	}
	return h.Sum64()
}

// walker passes each node, edge and probe of a stream of batches to a
// visitor once. A node the input names only as an edge's end is passed on
// at the end of the walk (without a record), unless its own record came
// meanwhile; a node seen twice keeps its first record.
type walker struct {
	v        visitor
	nodes    hashSet
	edges    hashSet
	probes   hashSet
	implicit map[uint64]end // edge ends whose record has not come yet
}

// end is a node known so far only as an edge's end: its ID and type.
type end struct {
	id  string
	typ string
}

func newWalker(v visitor) *walker {
	return &walker{v: v, nodes: hashSet{}, edges: hashSet{}, probes: hashSet{}, implicit: map[uint64]end{}}
}

// batch visits one batch: its nodes first, then its edges and probes.
func (w *walker) batch(b *spyder.Batch) error {
	for i := range b.NodesDomain {
		d := &b.NodesDomain[i]
		if err := w.explicit(Node{Type: TypeDomain, ID: string(d.Host), Domain: d}); err != nil {
			return err
		}
	}
	for i := range b.NodesIP {
		n := &b.NodesIP[i]
		if err := w.explicit(Node{Type: TypeIP, ID: n.IP, IP: n}); err != nil {
			return err
		}
	}
	for i := range b.NodesCert {
		c := &b.NodesCert[i]
		if err := w.explicit(Node{Type: TypeCert, ID: c.SPKISHA256, Cert: c}); err != nil {
			return err
		}
	}
	for i := range b.Edges {
		if err := w.edge(&b.Edges[i]); err != nil {
			return err
		}
	}
	for i := range b.Outcomes {
		if p := &b.Outcomes[i]; w.probes.add(keyHash(string(p.Host))) {
			if err := w.v.probe(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *walker) explicit(n Node) error {
	if n.ID == "" {
		return nil
	}
	h := keyHash(n.Type, n.ID)
	if !w.nodes.add(h) {
		return nil
	}
	delete(w.implicit, h)
	return w.v.node(n)
}

func (w *walker) edge(e *spyder.Edge) error {
	if e.Source == "" || e.Target == "" || !w.edges.add(keyHash(e.Type, e.Source, e.Target)) {
		return nil
	}
	w.noteEnd(SourceType(e.Type), e.Source)
	w.noteEnd(TargetType(e.Type), e.Target)
	return w.v.edge(e)
}

// end notes a node named by an edge, to be visited at the end if its
// record never comes.
func (w *walker) noteEnd(typ, id string) {
	h := keyHash(typ, id)
	if _, ok := w.nodes[h]; ok {
		return
	}
	if _, ok := w.implicit[h]; !ok {
		w.implicit[h] = end{id: id, typ: typ}
	}
}

// finish visits the nodes known only as edge ends, sorted by type and ID.
func (w *walker) finish() error {
	rest := make([]Node, 0, len(w.implicit))
	for _, e := range w.implicit {
		rest = append(rest, Node{Type: e.typ, ID: e.id})
	}
	sort.Slice(rest, func(i, j int) bool {
		if rest[i].Type != rest[j].Type {
			return rest[i].Type < rest[j].Type
		}
		return rest[i].ID < rest[j].ID
	})
	for _, n := range rest {
		w.nodes.add(keyHash(n.Type, n.ID))
		if err := w.v.node(n); err != nil {
			return err
		}
	}
	w.implicit = map[uint64]end{}
	return nil
}

// Walk reads names with r and visits the deduplicated graph.
func walk(r *Reader, names []string, v visitor) error {
	w := newWalker(v)
	if err := r.Read(names, w.batch); err != nil {
		return err
	}
	return w.finish()
}
