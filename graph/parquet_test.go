package graph

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/graph/graphtest"
	"github.com/spyder-crawler/spyder/internal/duckdbtest"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/tables"
	"github.com/spyder-crawler/spyder/tables/tablestest"
)

// synthFiles writes one synthetic crawl of hosts in the batch format
// (plain and gzip), the lines format and the edges format, and returns
// their paths.
func synthFiles(t *testing.T, hosts int) (batch, batchGz, lines, edges string) {
	t.Helper()
	dir := t.TempDir()
	batch, batchGz = filepath.Join(dir, "crawl.jsonl"), filepath.Join(dir, "crawl.jsonl.gz")
	lines, edges = filepath.Join(dir, "crawl.lines.jsonl"), filepath.Join(dir, "crawl.edges.jsonl")
	write := func(path string, o graphtest.Options, gz bool) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if gz {
			zw := gzip.NewWriter(f)
			defer zw.Close()
			if err := graphtest.Write(zw, o); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := graphtest.Write(f, o); err != nil {
			t.Fatal(err)
		}
	}
	write(batch, graphtest.Options{Hosts: hosts}, false)
	write(batchGz, graphtest.Options{Hosts: hosts}, true)
	write(edges, graphtest.Options{Hosts: hosts, Edges: true}, false)
	// The lines file: the same batches through the run's own lines sink.
	in, err := os.Open(batch)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(lines)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	js, err := sink.NewJSONSink(out, sink.FormatLines)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var b spyder.Batch
		if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
			t.Fatal(err)
		}
		if err := js.WriteBatch(t.Context(), &b); err != nil {
			t.Fatal(err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return batch, batchGz, lines, edges
}

// TestExportParquet_EveryInputFormat exports one crawl from the batch
// format, its gzip, and the lines format: each time DuckDB finds the
// tables holding the rows of the lines file, table by table. From the
// edges format, the edges table holds the same edges.
func TestExportParquet_EveryInputFormat(t *testing.T) {
	batch, batchGz, lines, edges := synthFiles(t, 300)
	for name, in := range map[string]string{"batch": batch, "gzip": batchGz, "lines": lines} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			r := &Reader{}
			files, err := ExportParquet(r, []string{in}, dir, tables.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != len(tables.Names) || len(r.Problems.ByFile) != 0 {
				t.Fatalf("%d files, problems %+v", len(files), r.Problems)
			}
			tablestest.CheckAgree(t, lines, dir)
		})
	}
	dir := t.TempDir()
	if _, err := ExportParquet(&Reader{}, []string{edges}, dir, tables.Options{PartRows: 500}); err != nil {
		t.Fatal(err)
	}
	q := tablestest.AgreeSQL[tables.Edges]
	stmts := append(tablestest.Views(lines, dir),
		fmt.Sprintf(`SELECT count(*) AS n FROM (%s)`, q[1]),
		fmt.Sprintf(`SELECT count(*) AS n FROM ((SELECT #1, #2, #3, #4, #5, #6 FROM (%s) EXCEPT ALL SELECT #1, #2, #3, #4, #5, #6 FROM (%s)) UNION ALL (SELECT #1, #2, #3, #4, #5, #6 FROM (%s) EXCEPT ALL SELECT #1, #2, #3, #4, #5, #6 FROM (%s)))`, q[0], q[1], q[1], q[0]),
		fmt.Sprintf(`SELECT count(*) AS n FROM glob('%s/edges/*.parquet')`, dir))
	res := duckdbtest.Each(t, stmts...)
	n, diff, parts := duckdbtest.Int(t, res[len(res)-3][0]["n"]), duckdbtest.Int(t, res[len(res)-2][0]["n"]), duckdbtest.Int(t, res[len(res)-1][0]["n"])
	if n < 1000 || diff != 0 || parts < 2 {
		t.Errorf("from the edges format: %d edges in %d parts, %d differing from the lines file's; want over 1000, several parts, none differing", n, parts, diff)
	}
}
