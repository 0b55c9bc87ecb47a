package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spyder-crawler/spyder/graph"
	"github.com/spyder-crawler/spyder/graph/graphtest"
)

func synthCrawl(t *testing.T, name string, o graphtest.Options) string {
	t.Helper()
	var b strings.Builder
	if err := graphtest.Write(&b, o); err != nil {
		t.Fatal(err)
	}
	return mustFile(t, name, []byte(b.String()))
}

// summary prints for a person by default and JSON with --json; --out
// writes a file instead of stdout.
func TestGraph_Summary(t *testing.T) {
	crawl := synthCrawl(t, "crawl.jsonl", graphtest.Options{Hosts: 200})
	var s graph.Summary
	if err := json.Unmarshal([]byte(runApp(t, "graph", "summary", "--json", "--top", "3", crawl)), &s); err != nil {
		t.Fatal(err)
	}
	if s.Nodes["domain"] < 200 || s.Edges["RESOLVES_TO"] != 200 || len(s.Top["ip"]) != 3 || s.Outcomes["ok"] == 0 {
		t.Errorf("summary = %+v", s)
	}
	text := runApp(t, "graph", "summary", crawl)
	if !strings.Contains(text, "shared name servers") || !strings.Contains(text, s.Top["ns"][0].ID) {
		t.Errorf("text summary:\n%s", text)
	}
	out := filepath.Join(t.TempDir(), "summary.txt")
	if stdout := runApp(t, "graph", "summary", "--out", out, crawl); stdout != "" {
		t.Errorf("with --out, stdout = %q", stdout)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != text {
		t.Errorf("--out file differs from stdout (%v)", err)
	}
}

// Bad lines are reported with file and line on stderr and the valid ones
// still count (exit 0); a file with nothing valid exits 1 with one line.
func TestGraph_BadInput(t *testing.T) {
	good := synthCrawl(t, "crawl.jsonl", graphtest.Options{Hosts: 10, BatchSize: 5})
	data, _ := os.ReadFile(good)
	mixed := mustFile(t, "mixed.jsonl", append(append([]byte("garbage\n"), data...), `{"batch_id":"x","edges":[`...))
	out, errOut, err := tryApp(t.Context(), "graph", "summary", "--json", mixed)
	if err != nil {
		t.Fatalf("summary of a partly bad file: %v\n%s", err, errOut)
	}
	for _, w := range []string{mixed + ":1: not JSON", mixed + ":4: truncated JSON", mixed + ": 1 truncated, 1 not JSON"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
	if !strings.Contains(out, `"RESOLVES_TO": 10`) {
		t.Errorf("the valid lines were not all read:\n%s", out)
	}
	empty := mustFile(t, "empty.jsonl", nil)
	_, errOut, err = tryApp(t.Context(), "graph", "summary", empty)
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "no valid line of spyder output (batch, edges, lines or hosts) in "+empty) ||
		!strings.Contains(errOut, empty+": empty file") {
		t.Errorf("empty file: err %v, stderr %q", err, errOut)
	}
}

func TestGraph_Export(t *testing.T) {
	crawl := synthCrawl(t, "crawl.jsonl", graphtest.Options{Hosts: 50})
	if out := runApp(t, "graph", "export", "--format", "graphml", crawl); !strings.HasPrefix(out, "<?xml") || !strings.Contains(out, "<graphml") {
		t.Errorf("graphml on stdout: %.200s", out)
	}
	dir := filepath.Join(t.TempDir(), "neo")
	out := runApp(t, "graph", "export", "--format", "neo4j", "--out", dir, crawl)
	if !strings.Contains(out, "neo4j-admin database import full") || !strings.Contains(out, filepath.Join(dir, "domains.csv")) {
		t.Errorf("neo4j export printed %q", out)
	}
	pq := filepath.Join(t.TempDir(), "tables")
	if out := runApp(t, "graph", "export", "--format", "parquet", "--out", pq, crawl); !strings.Contains(out, "wrote 5 part files under "+pq) {
		t.Errorf("parquet export printed %q", out)
	}
	if parts, _ := filepath.Glob(filepath.Join(pq, "*", "export_*-000000.parquet")); len(parts) != 5 {
		t.Errorf("parquet export wrote %v; want a part in each of the 5 tables", parts)
	}
	if _, _, err := tryApp(t.Context(), "graph", "export", "--format", "parquet", "--out", crawl, crawl); err == nil ||
		!strings.Contains(err.Error(), crawl+" is a file; --format parquet writes a directory") {
		t.Errorf("parquet export onto a file: %v", err)
	}
	for _, args := range [][]string{{"--format", "neo4j", crawl}, {"--format", "parquet", crawl}, {"--format", "svg", crawl}} {
		if _, _, err := tryApp(t.Context(), append([]string{"graph", "export"}, args...)...); err == nil || exitCode(err) != 2 {
			t.Errorf("export %v: err %v, want a usage error", args, err)
		}
	}
}

func TestGraph_DiffAndView(t *testing.T) {
	old := synthCrawl(t, "old.jsonl", graphtest.Options{Hosts: 40})
	new := synthCrawl(t, "new.jsonl", graphtest.Options{Hosts: 40, Start: 20})
	out, errOut, err := tryApp(t.Context(), "graph", "diff", old, new)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var c graph.Change
	if err := json.Unmarshal([]byte(lines[0]), &c); err != nil || c.Change != "added" {
		t.Errorf("first diff line %q: %v", lines[0], err)
	}
	if !strings.Contains(errOut, "added,") || !strings.Contains(out, `"change":"removed"`) {
		t.Errorf("diff: stderr %q, output %.300s", errOut, out)
	}
	if _, _, err := tryApp(t.Context(), "graph", "diff", old); err == nil || exitCode(err) != 2 {
		t.Errorf("diff with one file: %v, want a usage error", err)
	}
	want := `graph diff: run "sunday" is in none of the files (runs there: default)`
	if out, _, err := tryApp(t.Context(), "graph", "diff", "--old-run", "default", "--new-run", "sunday", old, new); err == nil || err.Error() != want || out != "" {
		t.Errorf("diff with a run the files lack: %v, output %.100q; want %q and no output", err, out, want)
	}
	page := filepath.Join(t.TempDir(), "view.html")
	runApp(t, "graph", "view", "--out", page, "--host", "h3.example0.com", "--depth", "1", old)
	b, err := os.ReadFile(page)
	if err != nil || !strings.HasPrefix(string(b), "<!DOCTYPE html>") || strings.Contains(string(b), "<script src") {
		t.Errorf("view page: %v, %.100s", err, b)
	}
	if _, _, err := tryApp(t.Context(), "graph", "view", "--host", "nowhere.example", old); err == nil ||
		!strings.Contains(err.Error(), "nowhere.example is not in the graph") {
		t.Errorf("view of a missing host: %v", err)
	}
}
