package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
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
	checkOnce(t, got)
	checkWrittenOnce(t, w.Seeds, got.Probes, "")
	for _, pr := range got.Probes {
		if want, ok := w.PageOutcome[string(pr.Host)]; ok && pr.PageOutcome() != want {
			t.Errorf("%s: page outcome %q, want %q (%s)", pr.Host, pr.PageOutcome(), want, w.Describe(string(pr.Host)))
		}
	}
	// The world's CA is not handed to the process (crawltest keeps it in a
	// CertPool), so every certificate is recorded unverified.
	certs := slices.Clone(got.Certs)
	slices.SortFunc(certs, func(a, b spyder.CertNode) int { return strings.Compare(a.SPKISHA256, b.SPKISHA256) })
	if diff := cmp.Diff(w.Certs, certs, cmpopts.IgnoreFields(spyder.CertNode{}, "Verified")); diff != "" {
		t.Errorf("certificate nodes differ from World.Certs (-want +got):\n%s", diff)
	}
	if refused := w.Refused(); len(refused) > 0 {
		t.Errorf("spyder dialed %d addresses outside the world, e.g. %v", len(refused), refused[0])
	}
	stats := runApp(t, "queue", "stats", "--json", "--db", db)
	if !strings.Contains(stats, `"pending":0`) || !strings.Contains(stats, `"processing":0`) || !strings.Contains(stats, `"dead":0`) {
		t.Errorf("queue stats after the crawl = %s, want nothing pending, processing or dead", stats)
	}
}

// TestE2E_DomainsFromPipe seeds `spyder run` from a named pipe, as a
// shell's process substitution (--domains <(...)) hands one over. A pipe
// gives its lines once, so the checks before the run must leave them for
// seeding: every host in it is crawled.
func TestE2E_DomainsFromPipe(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 40, Seed: 12})
	dir := t.TempDir()
	fifo := filepath.Join(dir, "domains")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	wrote := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for a reader
		if err == nil {
			_, err = f.WriteString(strings.Join(w.Seeds, "\n") + "\n")
			f.Close()
		}
		wrote <- err
	}()
	t.Cleanup(func() {
		// A reader that never came would leave the writer waiting.
		if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-wrote
	})
	out := filepath.Join(dir, "graph.jsonl")
	p := startSpyder(t, append([]string{"run", "--db", filepath.Join(dir, "spyder.db"), "--domains", fifo, "--out", out}, worldArgs(t, w)...)...)
	if err := p.wait(t, 60*time.Second); err != nil {
		t.Fatalf("spyder run --domains FIFO: %v\n%s", err, p.log())
	}
	checkWrittenOnce(t, w.Seeds, mustReadBatches(t, out).Probes, "")
}

// TestE2E_InterruptResume stops a crawl with SIGINT midway and runs it
// again: the first run exits 130 (interrupted, hosts left) after handing
// its leases back (one
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
	if err := p.wait(t, 60*time.Second); exitStatus(err) != exitInterrupted {
		t.Fatalf("first run after SIGINT: %v (want exit %d: interrupted with hosts left)\n%s", err, exitInterrupted, p.log())
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

	// Concurrency as in the first run: at the default 1,024 a race build
	// under make test's load can take over the 3 s connect timeout for a
	// TLS handshake, and a page lost to that is not what this test checks.
	p2 := startSpyder(t, append([]string{"run", "--db", db, "--domains", domains, "--out", out2, "--concurrency", "32"}, wargs...)...)
	if err := p2.wait(t, 90*time.Second); err != nil {
		t.Fatalf("second run: %v\n%s", err, p2.log())
	}
	all := mustReadBatches(t, out1, out2)
	checkEdges(t, w, all.Edges)
	checkWrittenOnce(t, w.Seeds, all.Probes, " over both runs")
}

// TestE2E_FleetSharesWork runs three `spyder run --redis` processes on one
// queue of 3,000 hosts: every host is written exactly once over the fleet
// and the union of the outputs is the world's expected edges.
func TestE2E_FleetSharesWork(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 3000, Seed: 13})
	addr, key := redistest.Addr(t), redistest.Prefix(t)
	dir := t.TempDir()
	backend := []string{"--redis", addr, "--queue-key", key}
	runApp(t, append([]string{"queue", "seed"}, append(backend, mustDomains(t, w.Seeds))...)...)
	wargs := worldArgs(t, w)
	var outs []string
	var procs []*proc
	for i := range 3 {
		out := filepath.Join(dir, fmt.Sprintf("probe%d.jsonl", i))
		outs = append(outs, out)
		procs = append(procs, startSpyder(t, append(append([]string{"run", "--exit-when-empty", "--out", out,
			"--probe", fmt.Sprintf("probe%d", i), "--concurrency", "64"}, backend...), wargs...)...))
	}
	for i, p := range procs {
		if err := p.wait(t, 100*time.Second); err != nil {
			t.Fatalf("probe %d: %v\n%s", i, err, p.log())
		}
	}
	all := mustReadBatches(t, outs...)
	checkEdges(t, w, all.Edges)
	checkOnce(t, all)
	if _, dups := edgeSet(all.Edges); dups > 0 {
		t.Errorf("%d edges written more than once over the fleet, want 0 (one run, one seen set)", dups)
	}
	checkWrittenOnce(t, w.Seeds, all.Probes, " over the fleet")
	for i, out := range outs {
		if n := len(mustReadBatches(t, out).Probes); n == 0 {
			t.Errorf("probe %d did no work; the fleet did not share the queue", i)
		}
	}
}

// TestE2E_FleetSurvivesSIGKILL kills one of three fleet processes with
// SIGKILL mid-crawl: the survivors reclaim its leases once they expire and
// every host is still written.
func TestE2E_FleetSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	fleetSurvivesSIGKILL(t, redistest.Addr(t), redistest.Prefix(t))
}

// fleetSurvivesSIGKILL is TestE2E_FleetSurvivesSIGKILL on the Redis at
// addr, under key.
func fleetSurvivesSIGKILL(t *testing.T, addr, key string) {
	w := crawltest.Start(t, crawltest.Options{Hosts: 600, Seed: 14, HTTPLatency: 20 * time.Millisecond})
	backend := []string{"--redis", addr, "--queue-key", key, "--lease", "3s", "--fleet-limiter"}
	outs, procs := startFleet(t, w, 32, backend...)
	victim := procs[1]
	waitFor(t, 60*time.Second, "the victim to write output", func() bool {
		return len(mustReadBatches(t, outs[1]).Probes) >= 20
	})
	victim.cmd.Process.Signal(syscall.SIGKILL)
	victim.wait(t, 10*time.Second)
	for _, i := range []int{0, 2} {
		if err := procs[i].wait(t, 100*time.Second); err != nil {
			t.Fatalf("probe %d: %v\n%s", i, err, procs[i].log())
		}
	}
	all := mustReadBatches(t, outs...)
	checkEdges(t, w, all.Edges)
	counts := probeCounts(all.Probes)
	for _, h := range w.Seeds {
		if counts[h] == 0 {
			t.Errorf("host %s never written after a probe was killed", h)
		}
	}
	reclaimed := len(logLines(procs[0].log(), "lease_reclaimed")) + len(logLines(procs[2].log(), "lease_reclaimed"))
	if reclaimed == 0 {
		t.Errorf("no survivor logged lease_reclaimed after the victim died holding leases")
	}
}

// waitFor polls cond every 50ms until it holds, failing the test after d.
func waitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestE2E_MigrateBoltToRedis starts a crawl on a laptop (bbolt), stops it,
// exports the queue, imports it into Redis and finishes it with a fleet of
// two: every host is written exactly once over the three processes.
func TestE2E_MigrateBoltToRedis(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 300, Seed: 15, HTTPLatency: 30 * time.Millisecond})
	dir := t.TempDir()
	db := filepath.Join(dir, "laptop.db")
	wargs := worldArgs(t, w)
	laptop := filepath.Join(dir, "laptop.jsonl")
	p := startSpyder(t, append([]string{"run", "--db", db, "--domains", mustDomains(t, w.Seeds), "--out", laptop, "--concurrency", "16"}, wargs...)...)
	waitFor(t, 60*time.Second, "the laptop run to write output", func() bool {
		return len(mustReadBatches(t, laptop).Probes) >= 40
	})
	p.cmd.Process.Signal(syscall.SIGINT)
	if err := p.wait(t, 60*time.Second); exitStatus(err) != exitInterrupted {
		t.Fatalf("laptop run after SIGINT: %v (want exit %d)\n%s", err, exitInterrupted, p.log())
	}

	state := runApp(t, "queue", "export", "--db", db)
	if !strings.Contains(state, `"kind":"pending"`) {
		t.Fatalf("export holds no pending record; the laptop run did everything:\n%.500s", state)
	}
	file := filepath.Join(dir, "state.jsonl")
	if err := os.WriteFile(file, []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, key := redistest.Addr(t), redistest.Prefix(t)
	backend := []string{"--redis", addr, "--queue-key", key}
	runApp(t, append(append([]string{"queue", "import"}, backend...), file)...)
	sorted := func(s string) []string { l := strings.Split(s, "\n"); slices.Sort(l); return l }
	if diff := cmp.Diff(sorted(state), sorted(runApp(t, append([]string{"queue", "export"}, backend...)...))); diff != "" {
		t.Errorf("Redis export differs from the bbolt export it was imported from (-bbolt +redis):\n%s", diff)
	}

	outs := []string{laptop}
	var procs []*proc
	for i := range 2 {
		out := filepath.Join(dir, fmt.Sprintf("fleet%d.jsonl", i))
		outs = append(outs, out)
		procs = append(procs, startSpyder(t, append(append([]string{"run", "--exit-when-empty", "--out", out}, backend...), wargs...)...))
	}
	for i, p := range procs {
		if err := p.wait(t, 90*time.Second); err != nil {
			t.Fatalf("fleet probe %d: %v\n%s", i, err, p.log())
		}
	}
	all := mustReadBatches(t, outs...)
	checkEdges(t, w, all.Edges)
	checkWrittenOnce(t, w.Seeds, all.Probes, " over laptop and fleet")
}

// ingestServer is an ingest endpoint on loopback that refuses batches
// while failing() is true and keeps the ones it accepts.
type ingestServer struct {
	mu       sync.Mutex
	accepted output
	refused  int
	failing  func() bool
}

func startIngest(tb testing.TB, failing func() bool) (*ingestServer, string) {
	s := &ingestServer{failing: failing}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil || r.Method != http.MethodPost || s.failing() {
			s.refused++
			http.Error(w, "not now", http.StatusServiceUnavailable)
			return
		}
		s.accepted.add(tb, body, "POST body")
		w.WriteHeader(http.StatusAccepted)
	}))
	tb.Cleanup(srv.Close)
	return s, srv.URL + "/ingest"
}

func (s *ingestServer) snapshot() (output, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted, s.refused
}

// TestE2E_IngestOutage checks that no batch is lost when the ingest
// endpoint fails: for the first seconds of a run (retried, spooled,
// replayed when it answers), and for a whole run (spooled in the bbolt
// file, replayed by the next run).
func TestE2E_IngestOutage(t *testing.T) {
	t.Parallel()
	t.Run("ForAWhile", func(t *testing.T) {
		t.Parallel()
		w := crawltest.Start(t, crawltest.Options{Hosts: 200, Seed: 16, HTTPLatency: 20 * time.Millisecond})
		start := time.Now()
		srv, url := startIngest(t, func() bool { return time.Since(start) < 3*time.Second })
		db := filepath.Join(t.TempDir(), "spyder.db")
		p := startSpyder(t, append([]string{"run", "--db", db, "--domains", mustDomains(t, w.Seeds), "--ingest", url,
			"--ingest-retries", "1", "--concurrency", "64"}, worldArgs(t, w)...)...)
		if err := p.wait(t, 90*time.Second); err != nil {
			t.Fatalf("spyder run: %v\n%s", err, p.log())
		}
		got, refused := srv.snapshot()
		if refused == 0 {
			t.Fatalf("the endpoint refused nothing; the run ended before the outage was over? log:\n%s", p.log())
		}
		checkEdges(t, w, got.Edges)
		counts := probeCounts(got.Probes)
		for _, h := range w.Seeds {
			if counts[h] == 0 {
				t.Errorf("host %s never delivered", h)
			}
		}
	})
	for _, fleet := range []bool{false, true} {
		name := "WholeRun"
		if fleet {
			name = "WholeRunRedis"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testIngestDownWholeRun(t, fleet)
		})
	}
}

// testIngestDownWholeRun crawls with the endpoint down for the whole run
// (every batch spooled on disk: the bbolt file, or the probe's own file for a fleet),
// then runs again with it up: the spool is delivered, each host once.
func testIngestDownWholeRun(t *testing.T, fleet bool) {
	w := crawltest.Start(t, crawltest.Options{Hosts: 150, Seed: 17})
	var down atomic.Bool
	down.Store(true)
	srv, url := startIngest(t, down.Load)
	backend := []string{"--db", filepath.Join(t.TempDir(), "spyder.db")}
	if fleet {
		backend = []string{"--redis", redistest.Addr(t), "--queue-key", redistest.Prefix(t), "--exit-when-empty"}
	}
	wargs := append(worldArgs(t, w), backend...)
	p := startSpyder(t, append([]string{"run", "--domains", mustDomains(t, w.Seeds), "--ingest", url,
		"--ingest-retries", "1", "--ingest-timeout", "2s"}, wargs...)...)
	if err := p.wait(t, 90*time.Second); err != nil {
		t.Fatalf("spyder run with the endpoint down: %v\n%s", err, p.log())
	}
	if got, _ := srv.snapshot(); got.Lines > 0 {
		t.Fatalf("endpoint accepted %d batches while down", got.Lines)
	}
	if len(logLines(p.log(), "ingest_spooled")) != 1 {
		t.Errorf("the run did not log ingest_spooled once at exit:\n%s", p.log())
	}
	down.Store(false)
	p2 := startSpyder(t, append([]string{"run", "--ingest", url}, wargs...)...)
	if err := p2.wait(t, 60*time.Second); err != nil {
		t.Fatalf("second run: %v\n%s", err, p2.log())
	}
	got, _ := srv.snapshot()
	checkEdges(t, w, got.Edges)
	checkWrittenOnce(t, w.Seeds, got.Probes, " to the ingest endpoint")
}

// TestE2E_StandaloneCrashResume kills a standalone run with SIGKILL: the
// next run hands back the leases the dead one left in the file at once
// (lease_recovered) instead of waiting for them to expire, and finishes
// every host.
func TestE2E_StandaloneCrashResume(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 250, Seed: 18, HTTPLatency: 30 * time.Millisecond})
	dir := t.TempDir()
	db := filepath.Join(dir, "spyder.db")
	out1, out2 := filepath.Join(dir, "run1.jsonl"), filepath.Join(dir, "run2.jsonl")
	wargs := worldArgs(t, w)
	p := startSpyder(t, append([]string{"run", "--db", db, "--domains", mustDomains(t, w.Seeds), "--out", out1, "--concurrency", "32"}, wargs...)...)
	waitFor(t, 60*time.Second, "the first run to write output", func() bool {
		return len(mustReadBatches(t, out1).Probes) >= 40
	})
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t, 10*time.Second)

	start := time.Now()
	p2 := startSpyder(t, append([]string{"run", "--db", db, "--out", out2}, wargs...)...)
	if err := p2.wait(t, 90*time.Second); err != nil {
		t.Fatalf("run after the crash: %v\n%s", err, p2.log())
	}
	if time.Since(start) > time.Minute {
		t.Errorf("resume took %v: it waited for the dead run's leases (2m) to expire?", time.Since(start))
	}
	if len(logLines(p2.log(), "lease_recovered")) != 1 {
		t.Errorf("the second run did not log lease_recovered once:\n%s", p2.log())
	}
	all := mustReadBatches(t, out1, out2)
	checkEdges(t, w, all.Edges)
	counts := probeCounts(all.Probes)
	for _, h := range w.Seeds {
		if counts[h] == 0 {
			t.Errorf("host %s never written after the crash", h)
		}
	}
}

// TestE2E_FleetMetricsAndSignal runs one fleet probe without
// --exit-when-empty: it keeps running on an empty queue, serves /healthz
// and /metrics with the crawl's counts, and exits 0 on SIGTERM.
func TestE2E_FleetMetricsAndSignal(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 50, Seed: 19})
	addr, key := redistest.Addr(t), redistest.Prefix(t)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	p := startSpyder(t, append([]string{"run", "--redis", addr, "--queue-key", key, "--domains", mustDomains(t, w.Seeds),
		"--out", out, "--metrics-addr", "127.0.0.1:0"}, worldArgs(t, w)...)...)
	var maddr string
	waitFor(t, 30*time.Second, "metrics_listening", func() bool {
		if l := logLines(p.log(), "metrics_listening"); len(l) > 0 {
			maddr, _ = l[0]["addr"].(string)
		}
		return maddr != ""
	})
	waitFor(t, 60*time.Second, "every host to be written", func() bool {
		return len(probeCounts(mustReadBatches(t, out).Probes)) == len(w.Seeds)
	})
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + maddr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d %q, want 200", code, body)
	}
	var metrics string
	waitFor(t, 10*time.Second, "metrics to count every host", func() bool {
		_, metrics = get("/metrics")
		// The queue gauges are polled every second: wait for a poll after
		// the last ack too.
		return strings.Contains(metrics, fmt.Sprintf("spyder_acked_total %d", len(w.Seeds))) &&
			strings.Contains(metrics, `spyder_queue_items{state="processing"} 0`)
	})
	for _, want := range []string{`spyder_hosts_total{outcome="ok"}`, `spyder_edges_total{type="RESOLVES_TO"}`,
		`spyder_queue_items{state="pending"} 0`, `spyder_queue_items{state="seen"} 50`, "spyder_limiter_waits_total",
		"spyder_sink_retries_total 0", "spyder_queue_oldest_lease_age_seconds",
		"spyder_concurrency_limit 1024"} { // where the limit starts: 50 hosts never move it
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	select {
	case <-p.done:
		t.Fatalf("the fleet probe exited on an empty queue without --exit-when-empty:\n%s", p.log())
	case <-time.After(1500 * time.Millisecond):
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, 30*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v (want 0)\n%s", err, p.log())
	}
	if len(logLines(p.log(), "shutdown_cleanup")) != 1 {
		t.Errorf("no shutdown_cleanup line after SIGTERM:\n%s", p.log())
	}
}

// TestE2E_SecondSignalExitsAtOnce sends Ctrl-C twice while hosts hang: the
// process ends at once instead of waiting for the grace period, and the
// next run still finishes every host.
func TestE2E_SecondSignalExitsAtOnce(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 80, Seed: 20, SlowFraction: 0.5})
	dir := t.TempDir()
	db := filepath.Join(dir, "spyder.db")
	out1, out2 := filepath.Join(dir, "run1.jsonl"), filepath.Join(dir, "run2.jsonl")
	wargs := worldArgs(t, w)
	p := startSpyder(t, append([]string{"run", "--db", db, "--domains", mustDomains(t, w.Seeds), "--out", out1, "--grace", "1m"}, wargs...)...)
	waitFor(t, 30*time.Second, "the first run to write output", func() bool {
		return len(mustReadBatches(t, out1).Probes) >= 10
	})
	p.cmd.Process.Signal(syscall.SIGINT)
	waitFor(t, 10*time.Second, "the shutdown line", func() bool { return len(logLines(p.log(), "shutdown")) > 0 })
	p.cmd.Process.Signal(syscall.SIGINT)
	start := time.Now()
	err := p.wait(t, 20*time.Second)
	if time.Since(start) > 5*time.Second {
		t.Errorf("second SIGINT took %v to end the process, want at once", time.Since(start))
	}
	if err == nil {
		t.Errorf("process interrupted twice exited 0; want the signal's status")
	}
	p2 := startSpyder(t, append([]string{"run", "--db", db, "--out", out2}, wargs...)...)
	if err := p2.wait(t, 90*time.Second); err != nil {
		t.Fatalf("run after two interrupts: %v\n%s", err, p2.log())
	}
	all := mustReadBatches(t, out1, out2)
	checkEdges(t, w, all.Edges)
	checkEverySeedWritten(t, w, all)
}

// BenchmarkRun_Standalone times the built binary crawling a fast world of
// 2,000 hosts on a bbolt file (seeding, crawl, output), and reports hosts/s.
func BenchmarkRun_Standalone(b *testing.B) {
	w := crawltest.Start(b, crawltest.Options{Hosts: 2000, Seed: 31})
	domains := mustDomains(b, w.Seeds)
	wargs := worldArgs(b, w)
	mustBinary(b)
	b.ResetTimer()
	for range b.N {
		dir := b.TempDir()
		p := startSpyder(b, append([]string{"run", "--db", filepath.Join(dir, "s.db"), "--domains", domains,
			"--out", filepath.Join(dir, "out.jsonl"), "--log-level", "info"}, wargs...)...)
		if err := p.wait(b, 5*time.Minute); err != nil {
			b.Fatalf("spyder run: %v\n%s", err, p.log())
		}
	}
	b.ReportMetric(float64(len(w.Seeds)*b.N)/b.Elapsed().Seconds(), "hosts/s")
}

// TestE2E_Continuous crawls discovered hosts too: the queue stops growing
// at --max-domains, every host it holds is probed once, and the output is
// exactly what the world expects of a probe of those hosts.
func TestE2E_Continuous(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 200, Seed: 25})
	dir := t.TempDir()
	db, out := filepath.Join(dir, "spyder.db"), filepath.Join(dir, "out.jsonl")
	p := startSpyder(t, append([]string{"run", "--db", db, "--domains", mustDomains(t, w.Seeds[:20]), "--out", out,
		"--continuous", "--max-domains", "120"}, worldArgs(t, w)...)...)
	if err := p.wait(t, 90*time.Second); err != nil {
		t.Fatalf("spyder run --continuous: %v\n%s", err, p.log())
	}
	got := mustReadBatches(t, out)
	checkOnce(t, got) // hosts met as link targets, then queued and probed: one node each
	counts := probeCounts(got.Probes)
	var probed []string
	for h, n := range counts {
		probed = append(probed, h)
		if n != 1 {
			t.Errorf("host %s written %d times, want 1", h, n)
		}
	}
	if len(probed) != 120 {
		t.Errorf("probed %d hosts, want --max-domains 120", len(probed))
	}
	want, outcomes := w.ExpectedFor(probed)
	wantSet, _ := edgeSet(want)
	gotSet, _ := edgeSet(got.Edges)
	if diff := cmp.Diff(wantSet, gotSet); diff != "" {
		t.Errorf("edges differ from World.ExpectedFor(probed hosts) (-want +got):\n%s", diff)
	}
	for _, pr := range got.Probes {
		if o, ok := outcomes[string(pr.Host)]; ok && pr.PageOutcome() != o {
			t.Errorf("%s: page outcome %q, want %q", pr.Host, pr.PageOutcome(), o)
		}
	}
}

// startFleet starts three `spyder run --exit-when-empty` probes on backend
// over w, each writing probe<i>.jsonl in a new temporary directory with
// concurrency conc; the first seeds w's hosts, and the others start once
// it has. It returns the output files and the processes, in that order.
func startFleet(t *testing.T, w *crawltest.World, conc int, backend ...string) (outs []string, procs []*proc) {
	t.Helper()
	dir := t.TempDir()
	wargs := worldArgs(t, w)
	for i := range 3 {
		out := filepath.Join(dir, fmt.Sprintf("probe%d.jsonl", i))
		outs = append(outs, out)
		args := []string{"run", "--exit-when-empty", "--out", out, "--probe", fmt.Sprintf("probe%d", i), "--concurrency", strconv.Itoa(conc)}
		if i == 0 {
			args = append(args, "--domains", mustDomains(t, w.Seeds))
		}
		procs = append(procs, startSpyder(t, append(append(args, backend...), wargs...)...))
		if i == 0 {
			waitFor(t, 30*time.Second, "the first probe to seed and start", func() bool {
				return len(logLines(procs[0].log(), "seeded")) > 0
			})
		}
	}
	return outs, procs
}
