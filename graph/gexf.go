package graph

import (
	"bufio"
	"fmt"
	"strconv"

	"github.com/spyder-crawler/spyder"
)

// gexf writes GEXF 1.2, which wants every node before the first edge:
// the walker visits every node before any edge, so gexf writes each as it
// comes and closes the nodes at the first edge.
type gexf struct {
	noOutcomes
	w       *bufio.Writer
	inEdges bool // whether </nodes><edges> is written
	edges   int
}

func newGEXF(w *bufio.Writer) *gexf {
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<gexf xmlns="http://www.gexf.net/1.2draft" version="1.2">` + "\n" +
		`<meta><creator>spyder</creator><description>spyder crawl graph</description></meta>` + "\n" +
		`<graph mode="static" defaultedgetype="directed">` + "\n")
	declare := func(class string, defs []attrDef) {
		fmt.Fprintf(w, `<attributes class="%s">`+"\n", class)
		for _, a := range defs {
			fmt.Fprintf(w, `<attribute id="%s" title="%s" type="%s"/>`+"\n", a.key, a.key, a.typ)
		}
		w.WriteString("</attributes>\n")
	}
	declare("node", nodeAttrs)
	declare("edge", edgeAttrs)
	w.WriteString("<nodes>\n")
	return &gexf{w: w}
}

func (g *gexf) node(n Node) error {
	if g.inEdges {
		return fmt.Errorf("gexf: node %s after the first edge", n.ID)
	}
	g.w.WriteString(`<node id="`)
	xmlText(g.w, n.ID)
	g.w.WriteString(`" label="`)
	xmlText(g.w, n.ID)
	g.w.WriteString(`">`)
	attvalues(g.w, attrsOf(n))
	g.w.WriteString("</node>\n")
	return nil
}

func (g *gexf) edge(e *spyder.Edge) error {
	g.startEdges()
	openEdge(g.w, strconv.Itoa(g.edges), e)
	g.edges++
	g.w.WriteString(` label="`)
	xmlText(g.w, e.Type)
	g.w.WriteString(`">`)
	attvalues(g.w, edgeAttrsOf(e))
	g.w.WriteString("</edge>\n")
	return nil
}

// startEdges ends the nodes and starts the edges, once.
func (g *gexf) startEdges() {
	if !g.inEdges {
		g.w.WriteString("</nodes>\n<edges>\n")
		g.inEdges = true
	}
}

func attvalues(w *bufio.Writer, attrs []attr) {
	w.WriteString("<attvalues>")
	for _, a := range attrs {
		w.WriteString(`<attvalue for="` + a.key + `" value="`)
		xmlText(w, a.value)
		w.WriteString(`"/>`)
	}
	w.WriteString("</attvalues>")
}

// close ends the document.
func (g *gexf) close() error {
	g.startEdges()
	_, err := g.w.WriteString("</edges>\n</graph>\n</gexf>\n")
	return err
}
