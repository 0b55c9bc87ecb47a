package graph

import (
	"bytes"
	"hash/maphash"

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
	outcome(p *spyder.HostOutcome) error
}

// noOutcomes is embedded by visitors that ignore hosts' outcomes: the
// walker then leaves the outcomes out of its sort.
type noOutcomes struct{}

func (noOutcomes) outcome(*spyder.HostOutcome) error { return nil }

func (noOutcomes) ignoresOutcomes() {}

// wantsOutcomes reports whether v reads hosts' outcomes, that is, does
// not embed noOutcomes.
func wantsOutcomes(v visitor) bool {
	_, ignores := v.(interface{ ignoresOutcomes() })
	return !ignores
}

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
// visitor once, with memory that does not grow with the input: batch turns
// every node, edge end, edge and probe into a sort record (see records.go)
// in a [sorter], and finish takes them back in order, where the copies of
// one node or edge are next to each other. It visits every node first (by
// type and ID), then every edge (by type, source and target), then every
// probe (by host); probes only for a visitor that wants them (one that
// does not embed noOutcomes). That every node comes before every edge is
// a guarantee, which the GEXF writer counts on: node records sort ahead
// of edge records. A node seen twice keeps the record that came first in
// the input, as does an edge or a probe; a node the input names only as
// an edge's end is visited without a record.
type walker struct {
	v        visitor
	s        *sorter
	outcomes bool   // whether v wants the outcomes
	seq      uint64 // records added so far: the input's order, to keep the first
	buf      []byte
	// ends holds hashes of the nodes whose record, or one edge end naming
	// them, was added lately: an edge end among them adds nothing new to
	// the sort, so it is left out. A host's edges start at the host whose
	// record its batch holds, and shared targets (addresses, name servers)
	// come back again and again, so this leaves out most of them. It is
	// emptied when it reaches maxEnds, which bounds it.
	ends hashSet
}

// maxEnds bounds a walker's ends: 8 bytes a hash, some 40 MiB at most.
const maxEnds = 1 << 20

func newWalker(v visitor) *walker {
	return &walker{v: v, s: newSorter(), outcomes: wantsOutcomes(v), ends: hashSet{}}
}

// end adds the record of an edge's end, unless the node is known to have
// a record in the sort already.
func (w *walker) end(typ, id string) error {
	if !w.ends.add(keyHash(typ, id)) {
		return nil
	}
	if len(w.ends) >= maxEnds {
		w.ends = hashSet{}
	}
	return w.add(nodeRecord(w.buf[:0], Node{Type: typ, ID: id}, 0))
}

// known notes that n's own record is in the sort.
func (w *walker) known(n Node) Node {
	if len(w.ends) >= maxEnds {
		w.ends = hashSet{}
	}
	w.ends.add(keyHash(n.Type, n.ID))
	return n
}

// batch adds one batch's records.
func (w *walker) batch(b *spyder.Batch) error {
	for i := range b.NodesDomain {
		d := &b.NodesDomain[i]
		if err := w.add(nodeRecord(w.buf[:0], w.known(Node{Type: TypeDomain, ID: string(d.Host), Domain: d}), w.next())); err != nil {
			return err
		}
	}
	for i := range b.NodesIP {
		n := &b.NodesIP[i]
		if err := w.add(nodeRecord(w.buf[:0], w.known(Node{Type: TypeIP, ID: n.IP, IP: n}), w.next())); err != nil {
			return err
		}
	}
	for i := range b.NodesCert {
		c := &b.NodesCert[i]
		if err := w.add(nodeRecord(w.buf[:0], w.known(Node{Type: TypeCert, ID: c.SPKISHA256, Cert: c}), w.next())); err != nil {
			return err
		}
	}
	for i := range b.Edges {
		e := &b.Edges[i]
		if e.Source == "" || e.Target == "" {
			continue
		}
		if err := w.add(edgeRecord(w.buf[:0], e, w.next())); err != nil {
			return err
		}
		if err := w.end(SourceType(e.Type), e.Source); err != nil {
			return err
		}
		if err := w.end(TargetType(e.Type), e.Target); err != nil {
			return err
		}
	}
	if !w.outcomes {
		return nil
	}
	for i := range b.Outcomes {
		if err := w.add(outcomeRecord(w.buf[:0], &b.Outcomes[i], w.next())); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) next() uint64 { w.seq++; return w.seq }

// add adds rec unless it is nil (a key holding a byte the records use as
// a separator, which no host, address or hash holds).
func (w *walker) add(rec []byte) error {
	if rec == nil {
		return nil
	}
	w.buf = rec
	return w.s.add(rec)
}

// finish visits the records in order, each node, edge and probe once.
func (w *walker) finish() error {
	var last []byte // the key of the last group visited
	return w.s.each(func(rec []byte) error {
		key := recordKey(rec)
		if bytes.Equal(key, last) {
			return nil
		}
		last = append(last[:0], key...)
		return visitRecord(w.v, rec)
	})
}

// Walk reads names with r and visits the deduplicated graph.
func walk(r *Reader, names []string, v visitor) error {
	w := newWalker(v)
	if err := r.Read(names, w.batch); err != nil {
		w.s.close()
		return err
	}
	return w.finish()
}
