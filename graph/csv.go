package graph

import (
	"bufio"
	"encoding/csv"
	"strconv"

	"github.com/spyder-crawler/spyder"
)

// CSVHeader is the header of the csv export: one row per edge, with the
// type of each end, so an edge list alone rebuilds the typed graph.
var CSVHeader = []string{"source", "source_type", "target", "target_type", "type", "observed_at", "probe_id", "run_id"}

type csvEdges struct {
	noOutcomes
	w *csv.Writer
}

func newCSV(w *bufio.Writer) *csvEdges {
	c := csv.NewWriter(w)
	c.Write(CSVHeader)
	return &csvEdges{w: c}
}

func (c *csvEdges) node(Node) error { return nil }

func (c *csvEdges) edge(e *spyder.Edge) error {
	return c.w.Write([]string{e.Source, SourceType(e.Type), e.Target, TargetType(e.Type), e.Type,
		strconv.FormatInt(e.ObservedAt, 10), e.ProbeID, e.RunID})
}

func (c *csvEdges) close() error {
	c.w.Flush()
	return c.w.Error()
}
