package graph

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"strconv"

	"github.com/spyder-crawler/spyder"
)

// xmlText writes s escaped for XML text or a quoted attribute; characters
// XML cannot hold become U+FFFD. Plain ASCII (most hosts, addresses and
// numbers) is written as it is.
func xmlText(w *bufio.Writer, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '&' || c == '<' || c == '>' || c == '"' || c == '\'' {
			_ = xml.EscapeText(w, []byte(s))
			return
		}
	}
	w.WriteString(s)
}

// openEdge writes an XML edge element's start up to its target attribute,
// `<edge id="ID" source="S" target="T"`, which GEXF and GraphML share;
// the caller adds its own attributes and closes the tag.
func openEdge(w *bufio.Writer, id string, e *spyder.Edge) {
	w.WriteString(`<edge id="` + id + `" source="`)
	xmlText(w, e.Source)
	w.WriteString(`" target="`)
	xmlText(w, e.Target)
	w.WriteString(`"`)
}

// graphML writes GraphML: keys for every attribute, then nodes and edges
// as they come (GraphML lets them interleave). Errors stick in the
// bufio.Writer and surface when it is flushed.
type graphML struct {
	noOutcomes
	w     *bufio.Writer
	edges int
}

func newGraphML(w *bufio.Writer) *graphML {
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"` +
		` xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">` + "\n")
	for _, a := range nodeAttrs {
		fmt.Fprintf(w, `<key id="n_%s" for="node" attr.name="%s" attr.type="%s"/>`+"\n", a.key, a.key, a.typ)
	}
	for _, a := range edgeAttrs {
		fmt.Fprintf(w, `<key id="e_%s" for="edge" attr.name="%s" attr.type="%s"/>`+"\n", a.key, a.key, a.typ)
	}
	w.WriteString(`<graph id="spyder" edgedefault="directed">` + "\n")
	return &graphML{w: w}
}

func (g *graphML) node(n Node) error {
	g.w.WriteString(`<node id="`)
	xmlText(g.w, n.ID)
	g.w.WriteString(`">`)
	g.data("n_", attrsOf(n))
	g.w.WriteString("</node>\n")
	return nil
}

func (g *graphML) edge(e *spyder.Edge) error {
	openEdge(g.w, "e"+strconv.Itoa(g.edges), e)
	g.edges++
	g.w.WriteString(`>`)
	g.data("e_", edgeAttrsOf(e))
	g.w.WriteString("</edge>\n")
	return nil
}

func (g *graphML) data(prefix string, attrs []attr) {
	for _, a := range attrs {
		g.w.WriteString(`<data key="` + prefix + a.key + `">`)
		xmlText(g.w, a.value)
		g.w.WriteString("</data>")
	}
}

func (g *graphML) close() error {
	_, err := g.w.WriteString("</graph>\n</graphml>\n")
	return err
}
