package graph

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spyder-crawler/spyder"
)

// gexf writes GEXF 1.2, which wants every node before the first edge. In
// one pass over the input it writes the nodes as they come and the edges
// to a temporary file, appended after the nodes at the end: memory stays
// bounded whatever the graph's size.
type gexf struct {
	noOutcomes
	w     *bufio.Writer
	tmp   *os.File
	ew    *bufio.Writer
	edges int
}

func newGEXF(w *bufio.Writer) (*gexf, error) {
	tmp, err := os.CreateTemp("", "spyder-gexf-edges-*")
	if err != nil {
		return nil, fmt.Errorf("gexf: temporary file for the edges: %w", err)
	}
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
	return &gexf{w: w, tmp: tmp, ew: bufio.NewWriterSize(tmp, 1<<20)}, nil
}

func (g *gexf) node(n Node) error {
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
	openEdge(g.ew, strconv.Itoa(g.edges), e)
	g.edges++
	g.ew.WriteString(` label="`)
	xmlText(g.ew, e.Type)
	g.ew.WriteString(`">`)
	attvalues(g.ew, edgeAttrsOf(e))
	g.ew.WriteString("</edge>\n")
	return nil
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

// close appends the edges after the nodes and ends the document.
func (g *gexf) close() error {
	if err := g.ew.Flush(); err != nil {
		return fmt.Errorf("gexf: temporary file for the edges: %w", err)
	}
	if _, err := g.tmp.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("gexf: temporary file for the edges: %w", err)
	}
	g.w.WriteString("</nodes>\n<edges>\n")
	// With its buffer empty, the bufio.Writer hands the copy to the
	// output file, which lets the kernel copy the bytes.
	if err := g.w.Flush(); err != nil {
		return err
	}
	if _, err := io.Copy(g.w, g.tmp); err != nil {
		return fmt.Errorf("gexf: %w", err)
	}
	_, err := g.w.WriteString("</edges>\n</graph>\n</gexf>\n")
	return err
}

// cleanup removes the temporary file.
func (g *gexf) cleanup() {
	g.tmp.Close()
	os.Remove(g.tmp.Name())
}
