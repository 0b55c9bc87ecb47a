package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
)

// TestLoad_Concurrency crawls a simulated internet with the built binary
// once per setting of SPYDER_CONCURRENCY_LOAD and logs, for each, hosts/s,
// the recall and precision of the edges written against the world's, the
// hosts written with a timeout and the visits requeued for overload. A
// setting is a space-separated list of `spyder run` flags, settings are
// separated by commas; "default" is no flag. The world (10,000 hosts, 100 ms
// added to every DNS answer, 150 ms to every connect and response, no slow
// hosts; SPYDER_LOAD_HOSTS, SPYDER_LOAD_DNS and SPYDER_LOAD_HTTP change it)
// and the proxy every connection goes through run in this test process,
// spyder in its own, all on the machine's cores, with no per-host rate
// limit (--rate 0). The figures of docs/concurrency.md:
//
//	SPYDER_CONCURRENCY_LOAD='--concurrency 1024 --fixed-concurrency,--concurrency 8192,default' \
//	  go test -count=1 -run '^TestLoad_Concurrency$' -v -timeout 60m ./cmd/spyder/
func TestLoad_Concurrency(t *testing.T) {
	settings := os.Getenv("SPYDER_CONCURRENCY_LOAD")
	if settings == "" {
		t.Skip("set SPYDER_CONCURRENCY_LOAD to measure concurrency settings (docs/concurrency.md)")
	}
	hosts := crawltest.EnvInt(t, "SPYDER_LOAD_HOSTS", 10_000)
	dnsLat := crawltest.EnvDuration(t, "SPYDER_LOAD_DNS", 100*time.Millisecond)
	httpLat := crawltest.EnvDuration(t, "SPYDER_LOAD_HTTP", 150*time.Millisecond)
	w := crawltest.Start(t, crawltest.Options{Hosts: hosts, Seed: 31, DNSLatency: dnsLat, HTTPLatency: httpLat, NoRequestLog: true})
	if err := w.Warm(); err != nil {
		t.Fatal(err)
	}
	proxy := startProxy(t, w)
	for _, setting := range strings.Split(settings, ",") {
		flags := strings.Fields(setting)
		if setting == "default" {
			flags = nil
		}
		r := crawlLoad(t, w, proxy, flags)
		t.Logf("%-45s %7.0f hosts/s  recall %.4f  precision %.4f  timed out %d  requeued_overload %d  (%v)",
			setting, float64(len(w.Seeds))/r.elapsed.Seconds(), r.recall, r.precision, r.timedOut, r.requeued, r.elapsed.Round(time.Millisecond))
	}
}

// loadRun is one crawl's figures.
type loadRun struct {
	elapsed           time.Duration
	recall, precision float64
	timedOut          int
	requeued          int
}

// crawlLoad seeds a fresh bbolt file with w's seeds and crawls them with
// `spyder run` and flags, through proxy.
func crawlLoad(t *testing.T, w *crawltest.World, proxy string, flags []string) loadRun {
	dir := t.TempDir()
	db, out := filepath.Join(dir, "spyder.db"), filepath.Join(dir, "graph.jsonl")
	if err := startSpyder(t, "queue", "seed", "--db", db, mustDomains(t, w.Seeds)).wait(t, 5*time.Minute); err != nil {
		t.Fatalf("queue seed: %v", err)
	}
	args := append([]string{"run", "--db", db, "--out", out, "--probe", "load", "--rate", "0", "--progress=false",
		"--resolver", w.Resolver, "--dial-proxy", proxy}, flags...)
	start := time.Now()
	p := startSpyder(t, args...)
	if err := p.wait(t, 30*time.Minute); err != nil {
		t.Fatalf("spyder %v: %v\n%s", flags, err, loadTail(p.log(), 3000))
	}
	r := loadRun{elapsed: time.Since(start), requeued: len(logLines(p.log(), "requeued_overload"))}
	if os.Getenv("SPYDER_LOAD_LOG") != "" { // the limit's moves
		for _, l := range logLines(p.log(), "concurrency_limit") {
			t.Log(l["time"], l["limit"], l["in_flight"], l["hosts_per_s"], l["cause"], l["why"])
		}
	}
	got := mustReadBatches(t, out)
	want, _ := edgeSet(w.Expected)
	have, _ := edgeSet(got.Edges)
	expected := map[spyder.Edge]bool{}
	for _, e := range want {
		expected[e] = true
	}
	tp := 0
	for _, e := range have {
		if expected[e] {
			tp++
		}
	}
	r.recall, r.precision = float64(tp)/float64(max(len(want), 1)), float64(tp)/float64(max(len(have), 1))
	for _, pr := range got.Probes {
		for _, s := range pr.Steps {
			if s.Status == spyder.StatusTimeout || strings.Contains(s.Detail, "timeout") {
				r.timedOut++
				break
			}
		}
	}
	return r
}
