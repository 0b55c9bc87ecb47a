package graph

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Kind is a kind of bad input.
type Kind string

// The kinds of bad input a Reader counts. Each bad line is skipped, except a
// mixed-format line, which is valid and read.
const (
	Truncated Kind = "truncated"     // a JSON object cut short, or a compressed stream that ends early
	NotJSON   Kind = "not JSON"      // a line that does not parse as JSON
	NotRecord Kind = "not a record"  // JSON, but no record of any spyder output format
	Mixed     Kind = "mixed format"  // a line of one format in a file of another (an edge line in a batch file)
	TooLong   Kind = "line too long" // a line over MaxLine
	Empty     Kind = "empty file"    // a file with no lines at all
)

// shownPerKind is how many problems of one kind are reported line by line
// per file; the rest are only counted.
const shownPerKind = 5

// Problems counts the bad input of a read, per file and kind, and the
// valid records.
type Problems struct {
	Valid  int                     // valid records read
	ByFile map[string]map[Kind]int // file → kind → count
	// Refused holds the files with lines but no valid one (not spyder
	// output at all), each with its first problem; Report leaves them to
	// the caller, who refuses them in one line.
	Refused map[string]string
}

// refuse marks file as refused, for why.
func (p *Problems) refuse(file, why string) {
	if p.Refused == nil {
		p.Refused = make(map[string]string)
	}
	p.Refused[file] = why
}

func (p *Problems) add(file string, k Kind) {
	if p.ByFile == nil {
		p.ByFile = make(map[string]map[Kind]int)
	}
	if p.ByFile[file] == nil {
		p.ByFile[file] = make(map[Kind]int)
	}
	p.ByFile[file][k]++
}

// Count returns the number of problems of kind k in all files.
func (p *Problems) Count(k Kind) int {
	n := 0
	for _, byKind := range p.ByFile {
		n += byKind[k]
	}
	return n
}

// Report writes one line per file that had problems, with the count of
// each kind, e.g. "spyder graph: out.jsonl: 2 truncated, 1 not JSON".
func (p *Problems) Report(w io.Writer) {
	files := make([]string, 0, len(p.ByFile))
	for f := range p.ByFile {
		if p.Refused[f] == "" {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	for _, f := range files {
		var parts []string
		for _, k := range []Kind{Truncated, NotJSON, NotRecord, Mixed, TooLong, Empty} {
			if n := p.ByFile[f][k]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, k))
			}
		}
		fmt.Fprintf(w, "spyder graph: %s: %s\n", f, strings.Join(parts, ", "))
	}
}
