package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/graph"
)

// TestE2E_GraphReadsEveryFormat crawls one simulated internet once per
// output format, as a user would with `--format F --out F.jsonl`, and reads
// each output with `spyder graph summary --json`: batch, lines and hosts
// give the same summary (nodes, edges, every host's outcome), edges the
// same edges. The hosts output has one line per seed, failed hosts
// included, each whole: its edges are exactly the world's edges from that
// host, with the nodes they name.
func TestE2E_GraphReadsEveryFormat(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 60, Seed: 7})
	wargs := worldArgs(t, w)
	dir := t.TempDir()
	formats := []string{"batch", "edges", "lines", "hosts"}
	var wg sync.WaitGroup
	for _, f := range formats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"run", "--db", filepath.Join(dir, f+".db"), "--domains", mustDomains(t, w.Seeds),
				"--format", f, "--out", filepath.Join(dir, f+".jsonl"), "--concurrency", "16"}, wargs...)
			if err := startSpyder(t, args...).wait(t, 90*time.Second); err != nil {
				t.Errorf("spyder run --format %s: %v", f, err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	sums := map[string]graph.Summary{}
	for _, f := range formats {
		stdout, stderr, code := runBin(t, dir, nil, "graph", "summary", "--json", "--top", "0", f+".jsonl")
		var s graph.Summary
		if err := json.Unmarshal([]byte(stdout), &s); code != 0 || stderr != "" || err != nil {
			t.Fatalf("graph summary %s.jsonl: exit %d, %v\n%s", f, code, err, stderr)
		}
		sums[f] = s
	}
	if sums["batch"].Nodes["domain"] == 0 || len(sums["batch"].Outcomes) < 2 {
		t.Fatalf("batch summary %+v: too little to compare", sums["batch"])
	}
	for _, f := range []string{"lines", "hosts"} {
		if diff := cmp.Diff(sums["batch"], sums[f]); diff != "" {
			t.Errorf("graph summary of --format %s differs from batch's (-batch +%s):\n%s", f, f, diff)
		}
	}
	if diff := cmp.Diff(sums["batch"].Edges, sums["edges"].Edges); diff != "" {
		t.Errorf("graph summary of --format edges: edges differ from batch's (-batch +edges):\n%s", diff)
	}
	checkHostRecords(t, w, filepath.Join(dir, "hosts.jsonl"))

	// A file that is no spyder output is refused in one line, even beside
	// one that is.
	list := mustDomains(t, w.Seeds)
	for _, args := range [][]string{{"graph", "summary", list}, {"graph", "export", "--format", "dot", "batch.jsonl", list}} {
		stdout, stderr, code := runBin(t, dir, nil, args...)
		want := "spyder: graph: " + list + " is not spyder output (line 1: not JSON"
		if code != 1 || stdout != "" || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("spyder %v: exit %d, stdout %.80q, stderr %q; want 1, nothing, and one line %q…", args, code, stdout, stderr, want)
		}
	}
}

// checkHostRecords checks a --format hosts output of a crawl of w: one
// record per seed, each holding exactly the world's edges from its host
// (and the redirect hops it followed), and a node for every IP and
// certificate its edges name.
func checkHostRecords(t *testing.T, w *crawltest.World, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var all []spyder.Edge
	hosts := map[string]int{}
	failed := 0
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var h spyder.HostRecord
		if err := json.Unmarshal(line, &h); err != nil {
			t.Fatalf("%s: %v: %.200s", path, err, line)
		}
		hosts[string(h.Host)]++
		if h.Outcome != "ok" {
			failed++
		}
		if len(h.Steps) == 0 || h.RunID == "" || h.Timestamp == 0 {
			t.Errorf("host record of %s lacks steps, run or time: %.300s", h.Host, line)
		}
		ips, certs := map[string]bool{}, map[string]bool{}
		for _, n := range h.IPs {
			ips[n.IP] = true
		}
		for _, c := range h.Certs {
			certs[c.SPKISHA256] = true
		}
		for _, e := range h.Edges {
			if (e.Type == spyder.ResolvesTo && !ips[e.Target]) || (e.Type == spyder.UsesCert && !certs[e.Target]) {
				t.Errorf("host record of %s: edge %s → %s names a node the record lacks", h.Host, e.Type, e.Target)
			}
		}
		all = append(all, h.Edges...)
	}
	for _, s := range w.Seeds {
		if hosts[s] != 1 {
			t.Errorf("%d host records of seed %s, want 1", hosts[s], s)
		}
	}
	if len(hosts) != len(w.Seeds) || failed == 0 {
		t.Errorf("%d host records (%d failed) for %d seeds; want one each, failed ones included", len(hosts), failed, len(w.Seeds))
	}
	got, _ := edgeSet(all)
	want, _ := edgeSet(w.Expected)
	if !slices.Equal(got, want) {
		t.Errorf("the host records' edges differ from the world's: %s", cmp.Diff(want, got))
	}
}
