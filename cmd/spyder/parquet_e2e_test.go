package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
	"github.com/spyder-crawler/spyder/tables"
	"github.com/spyder-crawler/spyder/tables/tablestest"
)

// TestE2E_FormatParquetAgreesWithJSON crawls a simulated internet once
// with --format parquet to --out and --ingest at the same time: the
// batches the endpoint received, written as lines, and the Parquet tables
// hold the same rows, table by table, as DuckDB reads them; and the run
// leaves no journal or temporary file behind.
func TestE2E_FormatParquetAgreesWithJSON(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 120, Seed: 29})
	dir := t.TempDir()
	lines := filepath.Join(dir, "posted.jsonl")
	ingest, closeLines := postedLines(t, lines)
	out := filepath.Join(dir, "graph")
	servfail := w.StartResolver(t, "127.0.0.1")
	servfail.SetMode(crawltest.DNSServFail)
	args := append([]string{"run", "--db", filepath.Join(dir, "spyder.db"), "--domains", mustDomains(t, w.Seeds),
		"--out", out, "--format", "parquet", "--ingest", ingest}, worldArgs(t, w)...)
	args = append(args, "--resolver", servfail.Addr+","+w.Resolver, "--asn-db", writeASNTable(t, dir))
	p := startSpyder(t, args...)
	if err := p.wait(t, 90*time.Second); err != nil {
		t.Fatalf("spyder run: %v\n%s", err, p.log())
	}
	closeLines()
	tablestest.CheckAgree(t, lines, out)
	for _, tab := range tables.Names {
		if parts, _ := filepath.Glob(filepath.Join(out, tab, "*.parquet")); len(parts) != 1 {
			t.Errorf("%s: %d part files, want 1 (the run's one journal)", tab, len(parts))
		}
	}
	if left, _ := filepath.Glob(filepath.Join(out, sink.JournalDir, "*")); len(left) > 0 {
		t.Errorf("journal left after a finished run: %v", left)
	}
}

// TestE2E_FormatParquetFleet: two probes of a fleet crawl one Redis queue
// into the same --out directory with --format parquet. Each writes part
// files of its own, named for it, none overwriting the other's, and
// together the tables hold the same rows as the batches both POSTed, as
// DuckDB reads them.
func TestE2E_FormatParquetFleet(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 120, Seed: 37, DNSLatency: 50 * time.Millisecond})
	dir := t.TempDir()
	lines := filepath.Join(dir, "posted.jsonl")
	ingest, closeLines := postedLines(t, lines)
	backend := []string{"--redis", redistest.Addr(t), "--queue-key", redistest.Prefix(t)}
	runApp(t, append(append([]string{"queue", "seed"}, backend...), mustDomains(t, w.Seeds))...)
	out := filepath.Join(dir, "graph")
	var probes []*proc
	for _, name := range []string{"p0", "p1"} {
		args := append([]string{"run", "--probe", name, "--state-dir", filepath.Join(dir, name), "--exit-when-empty",
			"--concurrency", "8", "--fixed-concurrency", "--out", out, "--format", "parquet", "--ingest", ingest}, backend...)
		probes = append(probes, startSpyder(t, append(args, worldArgs(t, w)...)...))
	}
	for _, p := range probes {
		if err := p.wait(t, 120*time.Second); err != nil {
			t.Fatalf("spyder run: %v\n%s", err, p.log())
		}
	}
	closeLines()
	tablestest.CheckAgree(t, lines, out)
	for _, tab := range []string{"edges", "probes"} {
		parts, _ := filepath.Glob(filepath.Join(out, tab, "*.parquet"))
		by := map[string]int{}
		for _, p := range parts {
			name, _, _ := strings.Cut(filepath.Base(p), "_")
			by[name]++
		}
		if len(parts) != 2 || by["p0"] != 1 || by["p1"] != 1 {
			t.Errorf("%s: part files %v; want one of each probe's, named for it", tab, parts)
		}
	}
}

// postedLines starts an ingest endpoint that writes every batch POSTed to
// it to path in the lines format, and returns its URL and a func that
// closes the file once the runs are over.
func postedLines(t *testing.T, path string) (url string, done func()) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := sink.NewJSONSink(f, sink.FormatLines)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var b spyder.Batch
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &b); err != nil {
			t.Errorf("POST body is not a batch: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if err := js.WriteBatch(r.Context(), &b); err != nil {
			t.Errorf("write posted batch: %v", err)
		}
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() { f.Close() }
}

// TestE2E_FormatParquetResumes: a second run into the --out directory of
// tables an earlier run made adds part files of its own beside the first
// run's, and the two together hold the rows both runs POSTed.
func TestE2E_FormatParquetResumes(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 40, Seed: 41})
	dir := t.TempDir()
	lines := filepath.Join(dir, "posted.jsonl")
	ingest, closeLines := postedLines(t, lines)
	db, out := filepath.Join(dir, "spyder.db"), filepath.Join(dir, "graph")
	half := len(w.Seeds) / 2
	for i, seeds := range [][]string{w.Seeds[:half], w.Seeds[half:]} {
		args := append([]string{"run", "--db", db, "--domains", mustDomains(t, seeds),
			"--out", out, "--format", "parquet", "--ingest", ingest}, worldArgs(t, w)...)
		if err := startSpyder(t, args...).wait(t, 90*time.Second); err != nil {
			t.Fatalf("run %d into the same --out: %v", i+1, err)
		}
	}
	closeLines()
	tablestest.CheckAgree(t, lines, out)
	if parts, _ := filepath.Glob(filepath.Join(out, "probes", "*.parquet")); len(parts) != 2 {
		t.Errorf("probes: part files %v; want one of each run", parts)
	}
}
