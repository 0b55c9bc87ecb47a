package graph

import (
	"bufio"
	"fmt"
	"io"
	"slices"
)

// Formats are the names Export takes. neo4j and parquet write a directory
// (see ExportNeo4j and ExportParquet); the others write one stream.
var Formats = []string{"graphml", "gexf", "dot", "csv", "neo4j", "parquet"}

// exporter is a visitor that writes a format; close ends the document.
type exporter interface {
	visitor
	close() error
}

// Export reads names and writes their graph to out in format (graphml,
// gexf, dot or csv), each node and edge once.
func Export(r *Reader, names []string, format string, out io.Writer) error {
	bw := bufio.NewWriterSize(out, 1<<20)
	var x exporter
	switch format {
	case "graphml":
		x = newGraphML(bw)
	case "gexf":
		x = newGEXF(bw)
	case "dot":
		x = newDOT(bw)
	case "csv":
		x = newCSV(bw)
	default:
		return fmt.Errorf("unknown export format %q (want one of %v; neo4j and parquet write a directory)", format,
			slices.DeleteFunc(slices.Clone(Formats), func(f string) bool { return f == "neo4j" || f == "parquet" }))
	}
	if err := walk(r, names, x); err != nil {
		return err
	}
	if err := x.close(); err != nil {
		return err
	}
	return bw.Flush()
}
