package graph

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spyder-crawler/spyder"
)

//go:embed assets/force-graph.min.js
var forceGraphJS string

//go:embed view.html
var viewHTML string

//go:embed view.js
var viewJS string

// ViewOptions says what the view shows.
type ViewOptions struct {
	MaxNodes int    // at most this many nodes in the page
	Host     string // "": the whole graph; else the neighbourhood of Host
	Depth    int    // with Host: the hops shown at first; one more hop is in the page, shown on a click
}

// viewNode and viewLink are the page's data.
type viewNode struct {
	ID    string            `json:"id"`
	Type  string            `json:"type"`
	Level int               `json:"level"` // hops from the host; 0 for every node of a whole-graph view
	Attrs map[string]string `json:"attrs,omitempty"`
}

type viewLink struct {
	Source string `json:"source"`
	Target string `json:"target"`
	Type   string `json:"type"`
}

type viewMeta struct {
	Host       string `json:"host,omitempty"`
	Depth      int    `json:"depth"`
	MaxNodes   int    `json:"max_nodes"`
	TotalNodes int    `json:"total_nodes"` // nodes the chosen part had before the cut (whole graph: all of it)
	Truncated  bool   `json:"truncated"`
}

type viewData struct {
	Meta  viewMeta   `json:"meta"`
	Nodes []viewNode `json:"nodes"`
	Links []viewLink `json:"links"`
}

// View writes one self-contained HTML page (the force-graph library, the
// data and the page's script inlined) showing the graph of names, or the
// neighbourhood of opts.Host. It reads names several times (once per hop,
// then once for the attributes and edges): names must be files (see Spool).
func View(r *Reader, names []string, opts ViewOptions, out io.Writer) error {
	if opts.MaxNodes <= 0 {
		return fmt.Errorf("view: --max-nodes must be above 0")
	}
	opts.Host = strings.ToLower(strings.TrimSuffix(opts.Host, "."))
	var (
		levels map[string]int
		meta   = viewMeta{Host: opts.Host, Depth: opts.Depth, MaxNodes: opts.MaxNodes}
		err    error
	)
	if opts.Host == "" {
		levels, meta.TotalNodes, err = firstNodes(r, names, opts.MaxNodes)
		meta.Depth = 0
	} else {
		levels, meta.TotalNodes, err = neighbourhood(r, names, opts)
	}
	if err != nil {
		return err
	}
	meta.Truncated = meta.TotalNodes > len(levels)
	data, err := collect(r, names, levels)
	if err != nil {
		return err
	}
	data.Meta = meta
	return writePage(out, data)
}

// firstNodes returns the first max nodes of the walk, all at level 0, and
// the number of nodes in the whole graph.
func firstNodes(r *Reader, names []string, max int) (map[string]int, int, error) {
	levels := map[string]int{}
	total := 0
	err := walk(r, names, &nodeFunc{fn: func(n Node) {
		total++
		if len(levels) < max {
			levels[nodeKey(n.Type, n.ID)] = 0
		}
	}})
	return levels, total, err
}

// nodeKey is a node's key in the view's maps: its type and ID.
func nodeKey(typ, id string) string { return typ + "\x00" + id }

// nodeFunc is a visitor that only looks at nodes.
type nodeFunc struct {
	noOutcomes
	fn func(Node)
}

func (v *nodeFunc) node(n Node) error         { v.fn(n); return nil }
func (v *nodeFunc) edge(e *spyder.Edge) error { return nil }

// neighbourhood returns the nodes within opts.Depth+1 hops of opts.Host
// (edges taken in either direction) with their distance, cut at
// opts.MaxNodes, and how many it found (past the cut, nodes are counted,
// up to maxOver, but not followed, so that is a lower bound). Each hop is one pass over
// the input, keeping only the nodes found so far.
func neighbourhood(r *Reader, names []string, opts ViewOptions) (map[string]int, int, error) {
	start := nodeKey(TypeDomain, opts.Host)
	levels := map[string]int{start: 0}
	frontier := map[string]bool{start: true}
	// Nodes found past --max-nodes are counted, not followed, up to
	// maxOver of them, so memory stays bounded around a hub.
	over := hashSet{}
	for hop := 1; hop <= opts.Depth+1 && len(frontier) > 0; hop++ {
		next := map[string]bool{}
		reach := func(from, to string) {
			if !frontier[from] {
				return
			}
			if _, ok := levels[to]; ok || next[to] {
				return
			}
			if len(levels)+len(next) < opts.MaxNodes {
				next[to] = true
			} else {
				if len(over) < maxOver {
					over.add(keyHash(to))
				}
			}
		}
		// Reaching a node twice changes nothing, so the hop reads the
		// edges as they come, copies and all, keeping no set of them.
		err := r.Read(names, func(b *spyder.Batch) error {
			for _, e := range b.Edges {
				s, t := nodeKey(SourceType(e.Type), e.Source), nodeKey(TargetType(e.Type), e.Target)
				reach(s, t)
				reach(t, s)
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
		for k := range next {
			levels[k] = hop
		}
		frontier = next
	}
	if len(levels) == 1 {
		if ok, err := hasNode(r, names, start); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("view: host %s is not in the graph", opts.Host)
			}
			return nil, 0, err
		}
	}
	return levels, len(levels) + len(over), nil
}

// maxOver bounds the nodes past --max-nodes a view counts: a million
// hashes, 8 bytes each (the count shown is a lower bound anyway).
const maxOver = 1 << 20

// hasNode reports whether the graph holds the node with key k: its own
// record, or an edge's end.
func hasNode(r *Reader, names []string, k string) (bool, error) {
	found := false
	err := r.Read(names, func(b *spyder.Batch) error {
		for _, n := range b.NodesDomain {
			found = found || nodeKey(TypeDomain, string(n.Host)) == k
		}
		for _, e := range b.Edges {
			found = found || nodeKey(SourceType(e.Type), e.Source) == k || nodeKey(TargetType(e.Type), e.Target) == k
		}
		return nil
	})
	return found, err
}

// collect reads the attributes of the chosen nodes and the edges between
// them, each once, in one pass over the input that keeps only the chosen
// part: a node's first record, or none if the input names it only as an
// edge's end.
func collect(r *Reader, names []string, levels map[string]int) (*viewData, error) {
	d := &viewData{Nodes: []viewNode{}, Links: []viewLink{}}
	v := &collector{levels: levels, d: d, seen: map[string]bool{}}
	err := r.Read(names, func(b *spyder.Batch) error {
		for i := range b.NodesDomain {
			v.node(Node{Type: TypeDomain, ID: string(b.NodesDomain[i].Host), Domain: &b.NodesDomain[i]})
		}
		for i := range b.NodesIP {
			v.node(Node{Type: TypeIP, ID: b.NodesIP[i].IP, IP: &b.NodesIP[i]})
		}
		for i := range b.NodesCert {
			v.node(Node{Type: TypeCert, ID: b.NodesCert[i].SPKISHA256, Cert: &b.NodesCert[i]})
		}
		for i := range b.Edges {
			v.edge(&b.Edges[i])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(levels)) {
		if !v.seen[k] {
			typ, id, _ := strings.Cut(k, "\x00")
			v.node(Node{Type: typ, ID: id})
		}
	}
	return d, nil
}

type collector struct {
	levels map[string]int
	d      *viewData
	seen   map[string]bool // chosen nodes and edges between them already taken
}

func (c *collector) node(n Node) {
	k := nodeKey(n.Type, n.ID)
	level, ok := c.levels[k]
	if !ok || c.seen[k] {
		return
	}
	c.seen[k] = true
	attrs := map[string]string{}
	for _, a := range attrsOf(n)[1:] {
		attrs[a.key] = a.value
	}
	c.d.Nodes = append(c.d.Nodes, viewNode{ID: n.ID, Type: n.Type, Level: level, Attrs: attrs})
}

func (c *collector) edge(e *spyder.Edge) {
	_, s := c.levels[nodeKey(SourceType(e.Type), e.Source)]
	_, t := c.levels[nodeKey(TargetType(e.Type), e.Target)]
	k := "\x01" + e.Type + "\x00" + e.Source + "\x00" + e.Target
	if s && t && !c.seen[k] {
		c.seen[k] = true
		c.d.Links = append(c.d.Links, viewLink{Source: e.Source, Target: e.Target, Type: e.Type})
	}
}

// writePage writes the HTML page with the library, the data and the
// page's script inlined. The data is JSON inside a script element; Go's
// encoder writes '<' as \u003c, so the data cannot end the element.
func writePage(out io.Writer, d *viewData) error {
	js, err := json.Marshal(d)
	if err != nil {
		return err
	}
	colors, _ := json.Marshal(typeColors)
	page := strings.NewReplacer(
		"{{LIBRARY}}", forceGraphJS,
		"{{DATA}}", string(js),
		"{{COLORS}}", string(colors),
		"{{SCRIPT}}", viewJS,
	).Replace(viewHTML)
	_, err = io.WriteString(out, page)
	return err
}
