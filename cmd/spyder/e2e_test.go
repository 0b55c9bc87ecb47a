package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"spyder/crawl/crawltest"
)

// TestE2E_StandaloneEqualsExpected crawls a simulated internet with the
// built binary, as a user would: the output holds exactly the world's
// expected edges, each host's page outcome is the planned one, each host
// appears once, and the queue ends empty.
func TestE2E_StandaloneEqualsExpected(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 300, Seed: 11})
	dir := t.TempDir()
	db, out := filepath.Join(dir, "spyder.db"), filepath.Join(dir, "graph.jsonl")
	args := append([]string{"run", "--db", db, "--domains", mustDomains(t, w.Seeds), "--out", out}, worldArgs(t, w)...)
	p := startSpyder(t, args...)
	if err := p.wait(t, 90*time.Second); err != nil {
		t.Fatalf("spyder run: %v\n%s", err, p.log())
	}
	got := mustReadBatches(t, out)
	checkEdges(t, w, got.Edges)
	counts := probeCounts(got.Probes)
	for _, h := range w.Seeds {
		if counts[h] != 1 {
			t.Errorf("host %s written %d times, want 1", h, counts[h])
		}
	}
	for _, pr := range got.Probes {
		if want, ok := w.PageOutcome[pr.Host]; ok && pageOutcome(pr) != want {
			t.Errorf("%s: page outcome %q, want %q (%s)", pr.Host, pageOutcome(pr), want, w.Describe(pr.Host))
		}
	}
	if refused := w.Refused(); len(refused) > 0 {
		t.Errorf("spyder dialed %d addresses outside the world, e.g. %v", len(refused), refused[0])
	}
	stats := runApp(t, "queue", "stats", "--json", "--db", db)
	if !strings.Contains(stats, `"pending":0`) || !strings.Contains(stats, `"processing":0`) || !strings.Contains(stats, `"dead":0`) {
		t.Errorf("queue stats after the crawl = %s, want nothing pending, processing or dead", stats)
	}
}

// TestE2E_InterruptResume stops a crawl with SIGINT midway and runs it
// again: the first run exits 0 after handing its leases back (one
// shutdown_cleanup line), and the two outputs together hold every expected
// edge with no host written twice.
func TestE2E_InterruptResume(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 400, Seed: 12, HTTPLatency: 30 * time.Millisecond, DNSLatency: 5 * time.Millisecond, SlowFraction: 0.1})
	dir := t.TempDir()
	db := filepath.Join(dir, "spyder.db")
	out1, out2 := filepath.Join(dir, "run1.jsonl"), filepath.Join(dir, "run2.jsonl")
	domains := mustDomains(t, w.Seeds)
	wargs := worldArgs(t, w)

	p := startSpyder(t, append([]string{"run", "--db", db, "--domains", domains, "--out", out1, "--concurrency", "32", "--grace", "1s"}, wargs...)...)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if n := len(mustReadBatches(t, out1).Probes); n >= 60 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("first run wrote too little in 60s:\n%s", p.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if err := p.wait(t, 60*time.Second); err != nil {
		t.Fatalf("first run after SIGINT: %v (want exit 0)\n%s", err, p.log())
	}
	cleanup := logLines(p.log(), "shutdown_cleanup")
	if len(cleanup) != 1 {
		t.Fatalf("first run logged %d shutdown_cleanup lines, want 1:\n%s", len(cleanup), p.log())
	}
	if n, _ := cleanup[0]["returned"].(float64); n == 0 {
		t.Errorf("shutdown_cleanup returned no host; with hanging hosts and a 1s grace some must be handed back: %v", cleanup[0])
	}
	first := mustReadBatches(t, out1)
	if len(probeCounts(first.Probes)) >= len(w.Seeds) {
		t.Fatalf("first run finished all %d hosts before the signal; nothing left to resume", len(w.Seeds))
	}

	p2 := startSpyder(t, append([]string{"run", "--db", db, "--domains", domains, "--out", out2}, wargs...)...)
	if err := p2.wait(t, 90*time.Second); err != nil {
		t.Fatalf("second run: %v\n%s", err, p2.log())
	}
	all := mustReadBatches(t, out1, out2)
	checkEdges(t, w, all.Edges)
	counts := probeCounts(all.Probes)
	for _, h := range w.Seeds {
		if counts[h] != 1 {
			t.Errorf("host %s written %d times over both runs, want 1", h, counts[h])
		}
	}
}
