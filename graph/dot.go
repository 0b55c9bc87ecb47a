package graph

import (
	"bufio"
	"strings"

	"github.com/spyder-crawler/spyder"
)

// Colours of the node types, in DOT and in the HTML view.
var typeColors = map[string]string{TypeDomain: "#4e79a7", TypeIP: "#f28e2b", TypeCert: "#59a14f", TypeAS: "#b07aa1"}

// dot writes Graphviz DOT: a digraph whose nodes and edges carry the same
// attributes as in GraphML, plus a fill colour per node type.
type dot struct {
	noOutcomes
	w *bufio.Writer
}

func newDOT(w *bufio.Writer) *dot {
	w.WriteString("digraph spyder {\n  node [style=filled, fontcolor=white];\n")
	return &dot{w: w}
}

var dotEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)

func (d *dot) quoted(s string) {
	d.w.WriteByte('"')
	dotEscaper.WriteString(d.w, s)
	d.w.WriteByte('"')
}

func (d *dot) attrs(attrs []attr) {
	d.w.WriteString(" [")
	for i, a := range attrs {
		if i > 0 {
			d.w.WriteString(", ")
		}
		d.w.WriteString(a.key + "=")
		d.quoted(a.value)
	}
	d.w.WriteString("];\n")
}

func (d *dot) node(n Node) error {
	d.w.WriteString("  ")
	d.quoted(n.ID)
	d.attrs(append(attrsOf(n), attr{"fillcolor", typeColors[n.Type]}))
	return nil
}

func (d *dot) edge(e *spyder.Edge) error {
	d.w.WriteString("  ")
	d.quoted(e.Source)
	d.w.WriteString(" -> ")
	d.quoted(e.Target)
	d.attrs(edgeAttrsOf(e))
	return nil
}

func (d *dot) close() error {
	_, err := d.w.WriteString("}\n")
	return err
}
