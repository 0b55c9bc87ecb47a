// Package graph reads the graph spyder writes (the batch and the edges
// output formats, plain or gzip) as a stream and turns it into summaries,
// exports for graph tools, diffs and a self-contained HTML view.
//
// Everything here reads its input line by line and keeps only what its
// answer needs (hashes of the nodes and edges already seen, counters), never
// the whole graph, so a crawl of a million hosts fits in a few hundred MiB.
package graph

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spyder-crawler/spyder/crawl"
)

// MaxLine is the longest line read; a longer one is skipped and reported.
// spyder's batches are far smaller (a batch holds at most a few hundred hosts).
const MaxLine = 64 << 20

// Reader streams the records of spyder output files. Lines that are not a
// batch or an edge are counted in Problems and reported on Warn, one line
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

// record is one line of either format: a batch, or an edge with its own
// probe_id and run_id (which land in the embedded Batch's fields).
type record struct {
	crawl.Batch
	Type       string `json:"type"`
	Source     string `json:"source"`
	Target     string `json:"target"`
	ObservedAt int64  `json:"observed_at"`
}

// format is what a valid line held.
type format int

const (
	formatNone format = iota
	formatBatch
	formatEdge
)

func (f format) String() string {
	if f == formatEdge {
		return "edges"
	}
	return "batch"
}

// Read calls fn with every valid record of the named files in order ("-"
// is r.Stdin); an edge line comes as a batch holding that one edge. fn's
// batch is only valid during the call. Read stops at the first error fn
// returns or the first file that cannot be opened.
func (r *Reader) Read(names []string, fn func(*crawl.Batch) error) error {
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

func (r *Reader) readFile(name string, quiet bool, fn func(*crawl.Batch) error) error {
	var in io.Reader = r.Stdin
	display := "stdin"
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("graph input %w", err)
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

// fileReader reads one file, keeping its line number and its format (set
// by its first valid line) to tell a mixed-format line.
type fileReader struct {
	name   string
	warn   io.Writer
	probs  *Problems
	line   int
	format format
	valid  int
	shown  map[Kind]int
}

func (fr *fileReader) read(in io.Reader, fn func(*crawl.Batch) error) error {
	br := bufio.NewReaderSize(in, 1<<20)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			fr.problem(Truncated, "gzip header: %v", err)
			return nil
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<20)
	}
	var buf []byte
	for {
		line, err := readLine(br, &buf)
		if len(line) > 0 || err == nil {
			fr.line++
		}
		if len(line) > 0 {
			if err := fr.handle(line, err == io.EOF, fn); err != nil {
				return err
			}
		}
		switch {
		case err == nil:
			continue
		case err == io.EOF:
		case errors.Is(err, errLineTooLong):
			fr.problem(TooLong, "line longer than %d MiB, skipped", MaxLine>>20)
			continue
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum):
			fr.problem(Truncated, "compressed stream ends early (%v)", err)
		default:
			return fmt.Errorf("graph input %s: line %d: %w", fr.name, fr.line, err)
		}
		break
	}
	if fr.valid == 0 && fr.line == 0 {
		fr.line = 0
		fr.problem(Empty, "empty file")
	}
	fr.probs.Valid += fr.valid
	return nil
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its end of line; *buf is reused.
// A line longer than MaxLine is consumed and errLineTooLong returned.
func readLine(br *bufio.Reader, buf *[]byte) ([]byte, error) {
	*buf = (*buf)[:0]
	for {
		frag, err := br.ReadSlice('\n')
		if len(*buf)+len(frag) <= MaxLine {
			*buf = append(*buf, frag...)
		} else if err == bufio.ErrBufferFull || err == nil {
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err == nil || err == io.EOF {
				return nil, errLineTooLong
			}
			return nil, err
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSpace(*buf), err
	}
}

// handle decodes one non-empty line and passes it on if it is a record.
func (fr *fileReader) handle(line []byte, last bool, fn func(*crawl.Batch) error) error {
	var rec record
	if err := json.Unmarshal(line, &rec); err != nil {
		var se *json.SyntaxError
		switch {
		case line[0] == '{' && errors.As(err, &se) && int(se.Offset) >= len(line):
			fr.problem(Truncated, "truncated JSON (%d bytes)", len(line))
		case errors.As(err, &se):
			fr.problem(NotJSON, "not JSON: %v", err)
		default:
			fr.problem(NotRecord, "not a spyder batch or edge: %v", err)
		}
		return nil
	}
	f := classify(&rec)
	if f == formatNone {
		fr.problem(NotRecord, "JSON but not a spyder batch or edge (no batch_id, nodes or edges; no type, source and target)")
		return nil
	}
	if fr.format == formatNone {
		fr.format = f
	} else if f != fr.format {
		fr.problem(Mixed, "a %s line in a %s file (mixed formats); read anyway", f, fr.format)
	}
	fr.valid++
	if f == formatEdge {
		rec.Batch.Edges = []crawl.Edge{{Type: rec.Type, Source: rec.Source, Target: rec.Target,
			ObservedAt: rec.ObservedAt, ProbeID: rec.ProbeID, RunID: rec.RunID}}
	}
	return fn(&rec.Batch)
}

func classify(rec *record) format {
	b := &rec.Batch
	if b.BatchID != "" || b.NodesDomain != nil || b.NodesIP != nil || b.NodesCert != nil || b.Edges != nil || b.Probes != nil {
		return formatBatch
	}
	if rec.Type != "" && rec.Source != "" && rec.Target != "" {
		return formatEdge
	}
	return formatNone
}

// problem counts one bad line and reports it, up to shownPerKind per file
// and kind; the rest are counted in the summary line.
func (fr *fileReader) problem(k Kind, format string, args ...any) {
	fr.probs.add(fr.name, k)
	if fr.warn == nil {
		return
	}
	if fr.shown == nil {
		fr.shown = make(map[Kind]int)
	}
	fr.shown[k]++
	switch n := fr.shown[k]; {
	case n <= shownPerKind:
		where := fr.name
		if fr.line > 0 {
			where = fmt.Sprintf("%s:%d", fr.name, fr.line)
		}
		fmt.Fprintf(fr.warn, "spyder graph: %s: %s\n", where, fmt.Sprintf(format, args...))
	case n == shownPerKind+1:
		fmt.Fprintf(fr.warn, "spyder graph: %s: more lines like that (%s); counted, not shown\n", fr.name, k)
	}
}
