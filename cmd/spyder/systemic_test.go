package main

import (
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
)

// TestE2E_DeadResolverStopsTheRun points a crawl at a resolver that never
// answers: the run stops with one line naming it, writes no host's result
// and leaves every host pending; the next run, with the working resolver,
// crawls them all. On both backends.
func TestE2E_DeadResolverStopsTheRun(t *testing.T) {
	t.Parallel()
	onBothBackends(t, testDeadResolver)
}

func testDeadResolver(t *testing.T, backend []string) {
	w := crawltest.Start(t, crawltest.Options{Hosts: 40, Seed: 43})
	// A UDP socket nobody reads: queries reach it and are never answered.
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	wargs := worldArgs(t, w)
	deadArgs := slices.Clone(wargs)
	deadArgs[slices.Index(deadArgs, "--resolver")+1] = silent.LocalAddr().String()
	queueArgs := slices.DeleteFunc(slices.Clone(backend), func(s string) bool { return s == "--exit-when-empty" })
	dir := t.TempDir()
	out1, out2 := filepath.Join(dir, "dead.jsonl"), filepath.Join(dir, "ok.jsonl")

	p := startSpyder(t, append(append([]string{"run", "--domains", mustDomains(t, w.Seeds), "--out", out1,
		"--host-timeout", "3s"}, backend...), deadArgs...)...)
	err = p.wait(t, 90*time.Second)
	if err == nil {
		t.Fatalf("spyder run with a silent resolver exited 0, want an error\n%s", p.log())
	}
	last := lastLine(p.log())
	if !strings.HasPrefix(last, "spyder: ") || !strings.Contains(last, silent.LocalAddr().String()) || !strings.Contains(last, "does not answer") {
		t.Errorf("last line of stderr = %q, want one line naming the silent resolver", last)
	}
	if got := mustReadBatches(t, out1); len(got.Probes) != 0 {
		t.Errorf("the stopped run wrote %d hosts' results, want 0", len(got.Probes))
	}
	stats := runApp(t, append([]string{"queue", "stats", "--json"}, queueArgs...)...)
	if !strings.Contains(stats, `"pending":40`) || !strings.Contains(stats, `"dead":0`) || !strings.Contains(stats, `"processing":0`) {
		t.Errorf("queue stats after the stopped run = %s, want all 40 pending, none dead or in flight", stats)
	}

	p = startSpyder(t, append(append([]string{"run", "--out", out2}, backend...), wargs...)...)
	if err := p.wait(t, 90*time.Second); err != nil {
		t.Fatalf("spyder run with the working resolver: %v\n%s", err, p.log())
	}
	got := mustReadBatches(t, out2)
	checkEdges(t, w, got.Edges)
	checkEverySeedWritten(t, w, got)
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
