// Package graph reads the graph spyder writes (every output format: batch,
// edges, lines and hosts, plain or gzip) as a stream and turns it into
// summaries, exports for graph tools (Parquet tables among them), diffs and
// a self-contained HTML view.
//
// Everything here reads its input line by line, and its memory does not
// grow with the input: what must be deduplicated or counted across the
// whole graph goes through an external sort (see sorter), which spills
// sorted runs to the temporary directory past SortMemory bytes; the view
// of a host's neighbourhood keeps only the part it shows.
package graph

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spyder-crawler/spyder"
)

// MaxLine is the longest line read, in bytes; a longer one is skipped and
// reported. spyder's batches are far smaller (a batch holds at most a few
// hundred hosts). It is a variable only so that tests can lower it.
var MaxLine = 64 << 20

// Reader streams the records of spyder output files. Lines that are not a
// record of one of spyder's formats are counted in Problems and reported on Warn, one line
// each naming the file and line number; the valid lines are still read.
// A file is reported on its first pass only, so commands that read their
// input twice report each problem once.
type Reader struct {
	Warn     io.Writer // where problems are reported; nil: nowhere
	Stdin    io.Reader // what "-" reads
	Problems Problems

	passed  map[string]bool   // files already read once
	display map[string]string // file → name to report it by (a spooled stdin)
}

// record is one line of any format: a batch, an edge with its own
// probe_id and run_id (which land in the embedded Batch's fields), a line
// of the lines format (with its kind and batch_id), or a host record
// (host and steps; decoded again as a whole).
type record struct {
	spyder.Batch
	Type       string               `json:"type"`
	Source     string               `json:"source"`
	Target     string               `json:"target"`
	ObservedAt int64                `json:"observed_at"`
	Kind       string               `json:"kind"`
	Host       string               `json:"host"`
	Steps      []spyder.StepOutcome `json:"steps"`
}

// format is what a valid line held.
type format int

const (
	formatNone format = iota
	formatBatch
	formatEdge
	formatLines
	formatHosts
)

func (f format) String() string {
	switch f {
	case formatEdge:
		return "edges"
	case formatLines:
		return "lines"
	case formatHosts:
		return "hosts"
	}
	return "batch"
}

// Read calls fn with every valid record of the named files in order ("-"
// is r.Stdin); an edge line, a line of the lines format or a host record
// comes as a batch holding what it holds, with its batch's run and probe. fn's
// batch is only valid during the call. Read stops at the first error fn
// returns or the first file that cannot be opened.
func (r *Reader) Read(names []string, fn func(*spyder.Batch) error) error {
	if r.passed == nil {
		r.passed = make(map[string]bool)
	}
	for _, name := range names {
		quiet := r.passed[name] && name != "-"
		r.passed[name] = true
		if err := r.readFile(name, quiet, fn); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reader) readFile(name string, quiet bool, fn func(*spyder.Batch) error) error {
	var in io.Reader = r.Stdin
	display := "stdin"
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("graph input: %w", err)
		}
		defer f.Close()
		in, display = f, name
		if d, ok := r.display[name]; ok {
			display = d
		}
	} else if in == nil {
		in = os.Stdin
	}
	fr := &fileReader{name: display, warn: r.Warn, probs: &r.Problems}
	if quiet {
		fr.warn, fr.probs = nil, &Problems{}
	}
	return fr.read(in, fn)
}

// errFound stops Check's read at the first valid record.
var errFound = errors.New("found a valid record")

// Check reads each named file (not stdin) until its first valid record,
// and marks in Problems.Refused those with lines but no valid record, so a
// command can refuse them before it writes anything. It reports nothing on
// Warn and counts nothing else: the read that follows does. Most files
// show a valid record on their first line, so Check costs little.
func (r *Reader) Check(names []string) error {
	for _, name := range names {
		if name == "-" {
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("graph input: %w", err)
		}
		probs := &Problems{}
		fr := &fileReader{name: name, probs: probs}
		err = fr.read(f, func(*spyder.Batch) error { return errFound })
		f.Close()
		if err != nil && !errors.Is(err, errFound) {
			return err
		}
		if why, ok := probs.Refused[name]; ok {
			r.Problems.refuse(name, why)
		}
	}
	return nil
}
