package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// Load tests. They drive the built binary as an operator
// would and measure each spyder process from outside: hosts/s, peak RSS and
// Redis's used_memory_peak. Peak RSS is VmHWM read from /proc/PID/status at
// every sample: wait4's Maxrss cannot be used, because Go starts children
// with vfork semantics and the kernel then charges them the test process's
// own high-water mark.
//
// At full size each test also asserts that memory stays flat as the run
// grows, so that no per-host state outlives its ack: the highest anonymous
// RSS (RssAnon: heap and stacks; file-backed pages such as bbolt's mmap of
// its growing file are counted apart) sampled after the warm-up (a quarter
// of the work, half for the crawl) may exceed the highest sampled before by
// loadSlack at most.
//
// Full size (a million items, 50,000 crawled hosts) runs with SPYDER_SOAK=1
// in a build without -race, as `make soak` runs it:
//
//	SPYDER_SOAK=1 go test -count=1 -run '^TestLoad' -v -timeout 60m ./cmd/spyder/
//
// Otherwise a small version runs the same processes and output checks; it is
// too short to tell a leak from the heap's first growth, so it only logs the
// memory figures.

// loadSize is how much work a load test does.
type loadSize struct {
	items int           // queue items through each backend
	procs int           // spyder processes on the Redis queue
	hosts int           // hosts of the simulated internet
	every time.Duration // sampling period
	wait  time.Duration // bound on one run
	full  bool          // full size: memory must stay flat
}

func loadSizes(t *testing.T) loadSize {
	if os.Getenv("SPYDER_SOAK") != "" && !raceBuild() {
		return loadSize{items: 1_000_000, procs: 8, hosts: 50_000, every: 500 * time.Millisecond, wait: 40 * time.Minute, full: true}
	}
	t.Parallel()
	return loadSize{items: 20_000, procs: 2, hosts: 1_000, every: 200 * time.Millisecond, wait: 3 * time.Minute}
}

// raceBuild reports whether this test binary was built with -race, whose
// overhead would measure itself: the full-size figures come from a build
// without it (the spyder binary under test never has it).
func raceBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// loadSlack is how much a process's anonymous RSS may grow after its
// warm-up (see loadProc.warmup), in KiB. Measured growth is 0-7 MiB: the
// heap's ups and downs, and in the bbolt run bbolt's in-memory page maps,
// which follow the file (some 60,000 pages at the end) rather than the
// hosts. A leak of 20
// bytes per host over the last 750,000 hosts of the bbolt run is 14 MiB, of
// an in-flight map entry with its host (which a test run with such a leak
// put at some 800 bytes of RSS) over the 94,000 hosts each Redis worker
// does then, 70 MiB, and of a probe's result (kilobytes) over the last
// 25,000 hosts of the crawl, tens of MiB.
func loadSlack(early int64) int64 { return 12<<10 + early/20 }

// TestLoad_Redis sends loadSize.items items through one Redis queue with
// loadSize.procs `spyder run --redis --fake-probe` processes: every host is
// written exactly once over the fleet, the queue ends empty, and each
// process's memory stays flat.
func TestLoad_Redis(t *testing.T) {
	sz := loadSizes(t)
	srv := redistest.Start(t)
	key := redistest.Prefix(t)
	backend := []string{"--redis", srv.Addr, "--queue-key", key}
	seedLoad(t, sz.items, backend)

	dir := t.TempDir()
	var procs []*loadProc
	var outs []string
	start := time.Now()
	for i := range sz.procs {
		out := filepath.Join(dir, fmt.Sprintf("probe%d.jsonl", i))
		outs = append(outs, out)
		procs = append(procs, startLoadProc(t, fmt.Sprintf("probe%d", i), append([]string{"run", "--exit-when-empty",
			"--fake-probe", "--out", out, "--probe", fmt.Sprintf("probe%d", i), "--metrics-addr", "127.0.0.1:0"}, backend...)...))
	}
	elapsed := monitorLoad(t, procs, sz, start)
	checkLoadOutput(t, outs, sz.items)
	stats := runApp(t, append([]string{"queue", "stats", "--json"}, backend...)...)
	checkLoadEmpty(t, stats)

	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rc.Close()
	info, err := rc.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatalf("INFO memory: %v", err)
	}
	t.Logf("load redis: %d items, %d processes: %.0f hosts/s (%v); redis used_memory_peak %s, used_memory %s, used_memory_rss %s",
		sz.items, sz.procs, float64(sz.items)/elapsed.Seconds(), elapsed.Round(time.Millisecond),
		loadInfoField(info, "used_memory_peak_human"), loadInfoField(info, "used_memory_human"), loadInfoField(info, "used_memory_rss_human"))
	logLoadProcs(t, procs, sz.items)
	checkFlat(t, procs, sz.full)
}

// TestLoad_Bolt sends loadSize.items items through one bbolt file with
// `spyder run --fake-probe`. One process only: bbolt locks its file (flock),
// so a standalone crawl is one process by design.
func TestLoad_Bolt(t *testing.T) {
	sz := loadSizes(t)
	dir := t.TempDir()
	db, out := filepath.Join(dir, "spyder.db"), filepath.Join(dir, "graph.jsonl")
	backend := []string{"--db", db}
	seedLoad(t, sz.items, backend)

	start := time.Now()
	p := startLoadProc(t, "standalone", "run", "--db", db, "--fake-probe", "--out", out, "--probe", "standalone", "--metrics-addr", "127.0.0.1:0")
	elapsed := monitorLoad(t, []*loadProc{p}, sz, start)
	checkLoadOutput(t, []string{out}, sz.items)
	checkLoadEmpty(t, runApp(t, "queue", "stats", "--json", "--db", db))
	st, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("load bolt: %d items, 1 process (bbolt locks its file): %.0f hosts/s (%v); bbolt file %d MiB",
		sz.items, float64(sz.items)/elapsed.Seconds(), elapsed.Round(time.Millisecond), st.Size()>>20)
	logLoadProcs(t, []*loadProc{p}, sz.items)
	checkFlat(t, []*loadProc{p}, sz.full)
}

// TestLoad_Crawl crawls loadSize.hosts hosts of the simulated internet with
// one standalone spyder process at its defaults (the world runs in this test
// process, so its memory is not the crawler's): every host is written once,
// no edge is one the world does not expect, every probe that ended without
// a timeout has all its expected edges, and the process's memory stays
// flat.
//
// Timeouts are allowed because they are right at this size: the world sends
// many hosts' redirects to a few landing hosts, which the per-host rate limit
// (1/s) serves one a second, and on two busy cores handshakes queue behind
// each other; exact equality with World.Expected is what the e2e tests check.
func TestLoad_Crawl(t *testing.T) {
	sz := loadSizes(t)
	start := time.Now()
	w := crawltest.Start(t, crawltest.Options{Hosts: sz.hosts, Seed: 31, DNSLatency: 20 * time.Millisecond,
		HTTPLatency: 50 * time.Millisecond, SlowFraction: 0.03, NoRequestLog: true})
	if err := w.Warm(); err != nil {
		t.Fatal(err)
	}
	t.Logf("world of %d hosts up in %v", len(w.Seeds), time.Since(start).Round(time.Millisecond))
	dir := t.TempDir()
	db, out := filepath.Join(dir, "spyder.db"), filepath.Join(dir, "graph.jsonl")
	seed := startSpyder(t, "queue", "seed", "--db", db, mustDomains(t, w.Seeds))
	if err := seed.wait(t, 5*time.Minute); err != nil {
		t.Fatalf("queue seed: %v\n%s", err, seed.log())
	}

	start = time.Now()
	p := startLoadProc(t, "crawl", "run", "--db", db, "--out", out, "--probe", "crawl", "--metrics-addr", "127.0.0.1:0",
		"--resolver", w.Resolver, "--dial-proxy", startProxy(t, w))
	p.warmup = 1
	elapsed := monitorLoad(t, []*loadProc{p}, loadSize{items: len(w.Seeds), every: sz.every, wait: sz.wait}, start)
	got := mustReadBatches(t, out)
	checkWrittenOnce(t, w.Seeds, got.Probes, "")
	timedOut := checkCrawlEdges(t, w, got)
	checkLoadEmpty(t, runApp(t, "queue", "stats", "--json", "--db", db))
	t.Logf("load crawl: %d hosts of the simulated internet, 1 process: %.0f hosts/s (%v); %d probes hit a timeout (%.1f%%)",
		len(w.Seeds), float64(len(w.Seeds))/elapsed.Seconds(), elapsed.Round(time.Millisecond),
		timedOut, 100*float64(timedOut)/float64(len(w.Seeds)))
	logLoadProcs(t, []*loadProc{p}, len(w.Seeds))
	checkFlat(t, []*loadProc{p}, sz.full)
}

// checkCrawlEdges fails on an edge the world does not expect, or an expected
// edge missing from a probe that ended without a timeout, and returns how
// many probes had a step time out (or a connect time out).
func checkCrawlEdges(t *testing.T, w *crawltest.World, got output) int {
	t.Helper()
	want, _ := edgeSet(w.Expected)
	have, _ := edgeSet(got.Edges)
	expected := map[spyder.Edge]bool{}
	for _, e := range want {
		expected[e] = true
	}
	written := map[spyder.Edge]bool{}
	var unexpected []spyder.Edge
	for _, e := range have {
		written[e] = true
		if !expected[e] && len(unexpected) < 10 {
			unexpected = append(unexpected, e)
		}
	}
	if len(unexpected) > 0 {
		t.Errorf("edges the world does not expect, e.g. %v", unexpected)
	}
	timedOut := map[string]bool{}
	steps := map[string][]spyder.StepOutcome{}
	for _, p := range got.Probes {
		steps[string(p.Host)] = p.Steps
		for _, s := range p.Steps {
			// A connect that timed out is a connect_error ("dial proxy …:
			// i/o timeout" when this process's proxy is slow to accept).
			if s.Status == spyder.StatusTimeout || strings.Contains(s.Detail, "i/o timeout") {
				timedOut[string(p.Host)] = true
			}
		}
	}
	// An edge a timed-out probe would have written is excused; a
	// REDIRECTS_TO edge's source may be a hop host rather than the probe's,
	// so the excused edges are the world's for the timed-out hosts.
	var late []string
	for h := range timedOut {
		late = append(late, h)
	}
	excusedEdges, _ := w.ExpectedFor(late)
	excused := map[spyder.Edge]bool{}
	for _, e := range excusedEdges {
		excused[e] = true
	}
	var missing []spyder.Edge
	for _, e := range want {
		if !written[e] && !excused[e] && len(missing) < 10 {
			missing = append(missing, e)
		}
	}
	if len(missing) > 0 {
		h := missing[0].Source
		t.Errorf("expected edges missing from probes that did not time out, e.g. %v; %s: %+v (%s)",
			missing, h, steps[h], w.Describe(h))
	}
	return len(timedOut)
}

// seedLoad seeds n hosts h0.l0.test … with `spyder queue seed`, in its own
// process so that a run's memory starts without them.
func seedLoad(t *testing.T, n int, backend []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "domains.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(bw, "%s\n", loadHost(i))
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	start := time.Now()
	p := startSpyder(t, append(append([]string{"queue", "seed"}, backend...), path)...)
	if err := p.wait(t, 10*time.Minute); err != nil {
		t.Fatalf("queue seed: %v\n%s", err, p.log())
	}
	t.Logf("seeded %d hosts in %v", n, time.Since(start).Round(time.Millisecond))
}

// loadHost is the i-th host of a load test; loadIndex inverts it.
func loadHost(i int) string { return fmt.Sprintf("h%d.l%d.test", i, i%997) }

func loadIndex(host string) (int, bool) {
	num, _, ok := strings.Cut(strings.TrimPrefix(host, "h"), ".")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(num)
	return i, err == nil && loadHost(i) == host
}

// loadProc is one spyder process of a load test and what was measured of it
// (sizes in KiB).
type loadProc struct {
	*proc
	name     string
	metrics  string   // address of its /metrics
	acked    int64    // spyder_acked_total, as last scraped
	anon     [4]int64 // highest RssAnon sampled in each quarter of the run (by items acked)
	samples  [4]int   // samples in each quarter
	file     int64    // highest RssFile sampled (bbolt's mmap, the binary)
	peak     int64    // VmHWM at its last sample
	reported int64    // hosts done, as its stop line reports

	// warmup is how many quarters the process takes to reach its working
	// size, the baseline memory growth is measured from: none for the
	// queue runs; one for the crawl, whose heap swings some 35 MiB between
	// collections (90-125 MiB sampled every second at 50,000 hosts) and
	// reaches the top of that swing only after its first quarter.
	warmup int
}

// anonEarly is the highest RssAnon sampled while warming up, anonLate the
// highest sampled after.
func (p *loadProc) anonEarly() int64 { return slices.Max(p.anon[:p.warmup+1]) }
func (p *loadProc) anonLate() int64  { return slices.Max(p.anon[p.warmup+1:]) }

func startLoadProc(t *testing.T, name string, args ...string) *loadProc {
	t.Helper()
	p := &loadProc{proc: startSpyder(t, args...), name: name}
	waitFor(t, 30*time.Second, name+" to serve /metrics", func() bool {
		if l := logLines(p.log(), "metrics_listening"); len(l) > 0 {
			p.metrics, _ = l[0]["addr"].(string)
		}
		return p.metrics != ""
	})
	return p
}

// monitorLoad samples every process's memory and progress every sz.every
// until all have exited (0, or the test fails), and returns the time since
// start, taken before the first process started.
func monitorLoad(t *testing.T, procs []*loadProc, sz loadSize, start time.Time) time.Duration {
	t.Helper()
	deadline := start.Add(sz.wait)
	tick := time.NewTicker(sz.every)
	defer tick.Stop()
	quarter := 0
	for {
		running := 0
		var acked int64
		for _, p := range procs {
			select {
			case <-p.done:
			default:
				running++
				if n, err := scrapeAcked(p.metrics); err == nil {
					p.acked = n
				}
				st := procStatus(p.cmd.Process.Pid)
				p.peak = max(p.peak, st["VmHWM"])
				if anon, ok := st["RssAnon"]; ok {
					p.anon[quarter] = max(p.anon[quarter], anon)
					p.samples[quarter]++
					p.file = max(p.file, st["RssFile"])
				}
			}
			acked += p.acked
		}
		if q := min(3, int(acked*4/int64(sz.items))); q > quarter {
			quarter = q
			t.Logf("%d%% done (%d acked) after %v", 25*q, acked, time.Since(start).Round(time.Millisecond))
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, p := range procs {
				p.cmd.Process.Kill()
			}
			t.Fatalf("load run not finished after %v (%d of %d acked)", sz.wait, acked, sz.items)
		}
		<-tick.C
	}
	elapsed := time.Since(start)
	for _, p := range procs {
		if p.err != nil {
			t.Fatalf("%s: %v\n%s", p.name, p.err, loadTail(p.log(), 4000))
		}
		for _, l := range logLines(p.log(), "stop") {
			n, _ := l["done"].(float64)
			p.reported = int64(n)
		}
	}
	return elapsed
}

// scrapeAcked reads spyder_acked_total from a process's /metrics.
func scrapeAcked(addr string) (int64, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "spyder_acked_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int64(f), err
		}
	}
	return 0, fmt.Errorf("no spyder_acked_total on %s", addr)
}

// procStatus returns the "kB" fields of /proc/pid/status (VmRSS, VmHWM,
// RssAnon, RssFile…), in KiB; none once the process has exited.
func procStatus(pid int) map[string]int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil
	}
	out := map[string]int64{}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if v, isKB := strings.CutSuffix(strings.TrimSpace(v), " kB"); ok && isKB {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}

// checkLoadOutput fails unless the output files hold the probe outcome of
// every host 0…n-1 exactly once. It streams: a million hosts' output is
// hundreds of megabytes.
func checkLoadOutput(t *testing.T, paths []string, n int) {
	t.Helper()
	count := make([]uint8, n)
	var foreign []string
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReaderSize(f, 1<<20)
		for line := 1; ; line++ {
			b, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(b)) > 0 {
				var batch struct {
					Probes []struct {
						Host string `json:"host"`
					} `json:"probes"`
				}
				if err := json.Unmarshal(b, &batch); err != nil {
					t.Fatalf("%s line %d: %v: %.200s", path, line, err, b)
				}
				for _, p := range batch.Probes {
					if i, ok := loadIndex(p.Host); ok && i < n {
						count[i] = min(count[i]+1, 9)
					} else if len(foreign) < 5 {
						foreign = append(foreign, p.Host)
					}
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}
	var missing, twice []string
	for i, c := range count {
		switch {
		case c == 0 && len(missing) < 5:
			missing = append(missing, loadHost(i))
		case c > 1 && len(twice) < 5:
			twice = append(twice, loadHost(i))
		}
	}
	if len(missing)+len(twice)+len(foreign) > 0 {
		t.Errorf("output of %d hosts: missing e.g. %v, written more than once e.g. %v, not seeded e.g. %v", n, missing, twice, foreign)
	}
}

func checkLoadEmpty(t *testing.T, statsJSON string) {
	t.Helper()
	for _, want := range []string{`"pending":0`, `"processing":0`, `"dead":0`} {
		if !strings.Contains(statsJSON, want) {
			t.Errorf("queue stats after the run = %s, want %s", statsJSON, want)
		}
	}
}

// logLoadProcs logs each process's figures in one comparable line.
func logLoadProcs(t *testing.T, procs []*loadProc, items int) {
	t.Helper()
	var done int64
	for _, p := range procs {
		done += p.reported
		grow := p.anonLate() - p.anonEarly()
		perHost := "n/a"
		if late := p.reported * int64(3-p.warmup) / 4; late > 0 {
			perHost = fmt.Sprintf("%.1f B/host", float64(grow<<10)/float64(late))
		}
		t.Logf("  %-10s done %7d  peak RSS (VmHWM) %4d MiB  anon RSS by quarter %d/%d/%d/%d MiB (%+d KiB after the first %d/4, %s)  file RSS %d MiB",
			p.name, p.reported, p.peak>>10, p.anon[0]>>10, p.anon[1]>>10, p.anon[2]>>10, p.anon[3]>>10, grow, p.warmup+1, perHost, p.file>>10)
	}
	if done != int64(items) {
		t.Errorf("processes report %d hosts done in all, want %d", done, items)
	}
}

// checkFlat fails when a process's anonymous memory grew by more than
// loadSlack after its warm-up (the first quarter, or two) of a full-size run.
func checkFlat(t *testing.T, procs []*loadProc, full bool) {
	t.Helper()
	if !full {
		return
	}
	for _, p := range procs {
		if p.samples[0] == 0 || p.samples[3] == 0 {
			t.Errorf("%s: memory samples by quarter %v: none in the first or the last", p.name, p.samples)
			continue
		}
		if early, late := p.anonEarly(), p.anonLate(); late > early+loadSlack(early) {
			t.Errorf("%s: anonymous RSS grew from %d KiB (first %d quarters) to %d KiB (rest), more than %d KiB: memory kept per host",
				p.name, early, p.warmup+1, late, loadSlack(early))
		}
	}
}

func loadInfoField(info, name string) string {
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return v
		}
	}
	return "?"
}

func loadTail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
