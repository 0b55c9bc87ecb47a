package graph

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder"
)

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func jsonLine(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readAll reads names and returns the edges read, in order, and stderr.
func readAll(t *testing.T, r *Reader, names ...string) ([]string, string) {
	t.Helper()
	var warn bytes.Buffer
	r.Warn = &warn
	var got []string
	err := r.Read(names, func(b *spyder.Batch) error {
		for _, e := range b.Edges {
			got = append(got, e.Source+">"+e.Target)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, warn.String()
}

// Every kind of bad line is counted, reported with its file and line
// number, and skipped; the valid lines around it are still read, a
// mixed-format line included.
func TestRead_BadLinesAreReportedAndSkipped(t *testing.T) {
	batch := func(src string) string {
		return jsonLine(t, spyder.Batch{BatchID: "b-" + src, Edges: []spyder.Edge{{Type: spyder.ResolvesTo, Source: src, Target: "192.0.2.1"}}})
	}
	edge := jsonLine(t, spyder.Edge{Type: spyder.LinksTo, Source: "e.com", Target: "f.com"})
	full := batch("c.com")
	lines := []string{
		batch("a.com"),       // 1
		full[:len(full)/2],   // 2: truncated
		"hello, world",       // 3: not JSON
		"",                   // 4: blank, ignored
		`{"foo": 1}`,         // 5: JSON, not a record
		`[1, 2]`,             // 6: JSON, not a record
		edge,                 // 7: mixed format, read
		batch("b.com"),       // 8
		"\x00\x01\x02binary", // 9: not JSON
		full[:len(full)-3],   // 10: truncated, at the end without a newline
	}
	p := writeFile(t, "out.jsonl", []byte(strings.Join(lines, "\n")))
	r := &Reader{}
	got, warn := readAll(t, r, p)
	if d := gocmp.Diff([]string{"a.com>192.0.2.1", "e.com>f.com", "b.com>192.0.2.1"}, got); d != "" {
		t.Errorf("records read (-want +got):\n%s", d)
	}
	want := map[Kind]int{Truncated: 2, NotJSON: 2, NotRecord: 2, Mixed: 1}
	if d := gocmp.Diff(want, r.Problems.ByFile[p]); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	if r.Problems.Valid != 3 {
		t.Errorf("valid = %d, want 3", r.Problems.Valid)
	}
	for _, w := range []string{p + ":2: truncated JSON", p + ":3: not JSON", p + ":5: JSON but not a spyder record",
		p + ":6: JSON but not a spyder record (not an object", p + ":7: an edges-format line in a batch-format file (mixed formats)",
		p + ":9: not JSON", p + ":10: truncated JSON"} {
		if !strings.Contains(warn, w) {
			t.Errorf("stderr lacks %q:\n%s", w, warn)
		}
	}
	var report bytes.Buffer
	r.Problems.Report(&report)
	if w := p + ": 2 truncated, 2 not JSON, 2 not a record, 1 mixed format\n"; report.String() != "spyder graph: "+w {
		t.Errorf("report = %q, want %q", report.String(), w)
	}
}

// An empty file is a problem of its own; a file of only blank lines too.
func TestRead_EmptyFile(t *testing.T) {
	for name, data := range map[string]string{"empty.jsonl": "", "blank.jsonl": "\n  \r\n\n"} {
		p := writeFile(t, name, []byte(data))
		r := &Reader{}
		got, warn := readAll(t, r, p)
		if len(got) != 0 || r.Problems.ByFile[p][Empty] != 1 || !strings.Contains(warn, p+": empty file") {
			t.Errorf("%s: got %v, problems %v, stderr %q", name, got, r.Problems.ByFile, warn)
		}
	}
}

// gzip input is recognised by its content, whatever its name; a stream
// cut short gives the lines before the cut and a report.
func TestRead_Gzip(t *testing.T) {
	var lines []string
	for i := range 2000 {
		lines = append(lines, jsonLine(t, spyder.Edge{Type: spyder.UsesNS, Source: "h" + strconv.Itoa(i) + ".com", Target: "ns.example.net"}))
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(strings.Join(lines, "\n") + "\n"))
	zw.Close()
	whole := writeFile(t, "edges.jsonl", z.Bytes()) // no .gz suffix
	r := &Reader{}
	got, warn := readAll(t, r, whole)
	if len(got) != 2000 || warn != "" {
		t.Fatalf("read %d edges from gzip, stderr %q; want 2000 and nothing", len(got), warn)
	}
	cut := writeFile(t, "cut.jsonl.gz", z.Bytes()[:z.Len()*2/3])
	r = &Reader{}
	got, warn = readAll(t, r, cut)
	if len(got) == 0 || len(got) >= 2000 || r.Problems.ByFile[cut][Truncated] == 0 {
		t.Errorf("cut gzip: read %d edges, problems %v; want some, and a truncation", len(got), r.Problems.ByFile)
	}
	if !strings.Contains(warn, "compressed stream ends early") {
		t.Errorf("stderr %q does not say the stream was cut", warn)
	}
}

// "-" reads the Reader's Stdin; a second pass over a file reports nothing
// again.
func TestRead_StdinAndSecondPass(t *testing.T) {
	in := jsonLine(t, spyder.Edge{Type: spyder.UsesMX, Source: "a.com", Target: "mx.b.com"}) + "\nnot json\n"
	r := &Reader{Stdin: strings.NewReader(in)}
	got, warn := readAll(t, r, "-")
	if len(got) != 1 || !strings.Contains(warn, "stdin:2: not JSON") {
		t.Errorf("stdin: got %v, stderr %q", got, warn)
	}
	p := writeFile(t, "x.jsonl", []byte(in))
	r = &Reader{}
	readAll(t, r, p)
	got, warn = readAll(t, r, p)
	if len(got) != 1 || warn != "" || r.Problems.ByFile[p][NotJSON] != 1 {
		t.Errorf("second pass: got %v, stderr %q, problems %v", got, warn, r.Problems.ByFile)
	}
}

// A line over MaxLine is skipped and reported; the lines around it are read.
func TestRead_LineTooLong(t *testing.T) {
	defer func(n int) { MaxLine = n }(MaxLine)
	MaxLine = 4096
	ok := jsonLine(t, spyder.Edge{Type: spyder.UsesNS, Source: "a.com", Target: "ns.b.net"})
	long := `{"type":"USES_NS","source":"` + strings.Repeat("x", 10000) + `.com","target":"ns.b.net"}`
	p := writeFile(t, "long.jsonl", []byte(ok+"\n"+long+"\n"+ok+"\n"))
	r := &Reader{}
	got, warn := readAll(t, r, p)
	if len(got) != 2 || r.Problems.ByFile[p][TooLong] != 1 || !strings.Contains(warn, p+":2: line longer than 4096 bytes") {
		t.Errorf("got %d records, problems %v, stderr %q", len(got), r.Problems.ByFile, warn)
	}
}
