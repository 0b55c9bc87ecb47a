package crawl_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"spyder/crawl"
	"spyder/crawl/crawltest"
	"spyder/limiter"
)

// crawlRun is one crawl of a world: the crawler, its limiter, what it
// dialed and wrote.
type crawlRun struct {
	world   *crawltest.World
	rate    float64
	burst   int
	out     bytes.Buffer
	mu      sync.Mutex
	dialed  []string
	results []*crawl.Result
	elapsed time.Duration
}

// crawlWorld probes every seed of w with workers goroutines, through a real
// limiter, a batcher and a JSON sink, as `spyder run` does.
func crawlWorld(tb testing.TB, w *crawltest.World, workers int, mod func(*crawl.Config)) *crawlRun {
	tb.Helper()
	// 4 requests/s per host rather than the CLI's default 1: the world sends
	// dozens of redirects to each of a few landing hosts, and at 1/s those
	// probes would wait past their deadline, which is not what this test
	// is about (the rate check below holds the crawl to whatever is set).
	run := &crawlRun{world: w, rate: 4, burst: 3}
	lim := limiter.New(run.rate, run.burst)
	defer lim.Close()
	cfg := crawl.Config{
		Resolver: w.Resolver,
		RootCAs:  w.RootCAs,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			run.mu.Lock()
			run.dialed = append(run.dialed, addr)
			run.mu.Unlock()
			return w.Dial(ctx, network, addr)
		},
		Limiter: lim,
		ProbeID: "probe-1",
		RunID:   "run-1",
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := crawl.New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	sink, err := crawl.NewJSONSink(&run.out, crawl.FormatBatch)
	if err != nil {
		tb.Fatal(err)
	}
	b := crawl.NewBatcher(sink, &crawl.MemoryEmitted{}, crawl.BatcherConfig{ProbeID: "probe-1", RunID: "run-1"})

	ctx := context.Background()
	hosts := make(chan string)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range hosts {
				r := c.Probe(ctx, h)
				if err := b.Add(ctx, r); err != nil {
					tb.Errorf("Add(%s): %v", h, err)
				}
				run.mu.Lock()
				run.results = append(run.results, r)
				run.mu.Unlock()
			}
		}()
	}
	for _, h := range w.Seeds {
		hosts <- h
	}
	close(hosts)
	wg.Wait()
	if err := b.Close(ctx); err != nil {
		tb.Fatalf("Batcher.Close: %v", err)
	}
	run.elapsed = time.Since(start)
	return run
}

type edgeKey struct{ Type, Source, Target string }

// batches decodes the JSON lines written.
func (r *crawlRun) batches(tb testing.TB) []crawl.Batch {
	tb.Helper()
	var out []crawl.Batch
	sc := bufio.NewScanner(bytes.NewReader(r.out.Bytes()))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var b crawl.Batch
		if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
			tb.Fatalf("output line is not a batch: %v", err)
		}
		out = append(out, b)
	}
	return out
}

func TestCrawl_World(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a 2,000-host world")
	}
	w := crawltest.Start(t, crawltest.Options{
		Hosts: 2000, Seed: 4, DNSLatency: 2 * time.Millisecond, HTTPLatency: 5 * time.Millisecond, SlowFraction: 0.03,
	})
	goroutines := runtime.NumGoroutine() // the world's servers included
	run := crawlWorld(t, w, 256, nil)
	t.Logf("crawled %d hosts in %v (%.0f hosts/s)", len(w.Seeds), run.elapsed, float64(len(w.Seeds))/run.elapsed.Seconds())

	batches := run.batches(t)
	got := make(map[edgeKey]bool)
	nodes := make(map[string]bool)
	probes := 0
	for _, b := range batches {
		if b.ProbeID != "probe-1" || b.RunID != "run-1" || b.BatchID == "" || b.Timestamp == 0 {
			t.Errorf("batch header %q %q %q %d incomplete", b.ProbeID, b.RunID, b.BatchID, b.Timestamp)
		}
		probes += len(b.Probes)
		for _, e := range b.Edges {
			k := edgeKey{e.Type, e.Source, e.Target}
			if got[k] {
				t.Errorf("edge %v emitted twice", k)
			}
			got[k] = true
			if e.RunID != "run-1" || e.ProbeID != "probe-1" || e.ObservedAt == 0 {
				t.Errorf("edge %v lacks run, probe or time", e)
			}
			if e.Type == crawl.AliasOf && e.Source == e.Target {
				t.Errorf("self ALIAS_OF: %v", e)
			}
		}
		for _, n := range b.NodesIP {
			if nodes["ip "+n.IP] {
				t.Errorf("IP node %s emitted twice", n.IP)
			}
			nodes["ip "+n.IP] = true
		}
		for _, n := range b.NodesCert {
			if nodes["cert "+n.SPKISHA256] {
				t.Errorf("cert node %s emitted twice", n.SPKISHA256)
			}
			nodes["cert "+n.SPKISHA256] = true
		}
	}
	if probes != len(w.Seeds) {
		t.Errorf("batches hold %d probe outcomes, want %d", probes, len(w.Seeds))
	}
	checkEdges(t, w, run, got)
	checkPolicy(t, w, run)
	checkRates(t, w, run)

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%d goroutines left after the crawl, %d before it:\n%s", n, goroutines, buf)
	}
}

// checkEdges compares the emitted edges with the world's Expected, with
// precision, recall and the hosts involved in any difference.
func checkEdges(t *testing.T, w *crawltest.World, run *crawlRun, got map[edgeKey]bool) {
	t.Helper()
	want := make(map[edgeKey]bool)
	for _, e := range w.Expected {
		want[edgeKey{e.Type, e.Source, e.Target}] = true
	}
	var missing, extra []edgeKey
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	tp := len(got) - len(extra)
	t.Logf("edges: %d expected, %d emitted; precision %.4f, recall %.4f", len(want), len(got),
		float64(tp)/math.Max(1, float64(len(got))), float64(tp)/math.Max(1, float64(len(want))))
	if len(missing) == 0 && len(extra) == 0 {
		return
	}
	byHost := make(map[string]*crawl.Result)
	for _, r := range run.results {
		byHost[r.Host] = r
	}
	sortKeys := func(ks []edgeKey) {
		sort.Slice(ks, func(i, j int) bool { return fmt.Sprint(ks[i]) < fmt.Sprint(ks[j]) })
	}
	sortKeys(missing)
	sortKeys(extra)
	var b strings.Builder
	hosts := make(map[string]bool)
	for _, k := range missing {
		fmt.Fprintf(&b, "- %s %s → %s\n", k.Type, k.Source, k.Target)
		hosts[k.Source] = true
	}
	for _, k := range extra {
		fmt.Fprintf(&b, "+ %s %s → %s\n", k.Type, k.Source, k.Target)
		hosts[k.Source] = true
	}
	n := 0
	for _, h := range slices.Sorted(func(yield func(string) bool) {
		for h := range hosts {
			if !yield(h) {
				return
			}
		}
	}) {
		if n++; n > 30 {
			break
		}
		fmt.Fprintf(&b, "\n%s: %s\n  outcome: %+v\n", h, w.Describe(h), byHost[h].Outcome.Steps)
	}
	t.Errorf("edges differ from Expected: %d missing (-), %d extra (+):\n%s", len(missing), len(extra), b.String())
}

// checkPolicy checks robots.txt blocks, the private-address guard and the
// user agent.
func checkPolicy(t *testing.T, w *crawltest.World, run *crawlRun) {
	t.Helper()
	blocked := make(map[string]bool)
	for _, h := range w.Blocked {
		blocked[h] = true
	}
	for _, r := range w.Requests() {
		if blocked[r.Host] && r.Path != "/robots.txt" {
			t.Errorf("fetched %s%s although its robots.txt blocks spyder", r.Host, r.Path)
		}
		if !strings.HasPrefix(r.UserAgent, "spyder/") {
			t.Errorf("request %s%s with user agent %q", r.Host, r.Path, r.UserAgent)
		}
	}
	for _, a := range run.dialed {
		ap, err := netip.ParseAddrPort(a)
		if err != nil || !crawl.IsPublic(ap.Addr()) {
			t.Errorf("dialed %s, not a public address", a)
		}
	}
	for _, a := range w.Refused() {
		t.Errorf("world refused a dial to %s", a)
	}
}

// checkRates checks no host saw more requests than the limiter allows (rate
// per second with a burst) nor requests closer than its Crawl-delay.
func checkRates(t *testing.T, w *crawltest.World, run *crawlRun) {
	t.Helper()
	times := make(map[string][]time.Time)
	for _, r := range w.Requests() {
		times[r.Host] = append(times[r.Host], r.Time)
	}
	// Server-side times shift by a few milliseconds of scheduling.
	const slack = 250 * time.Millisecond
	busiest := 0
	for h, ts := range times {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		busiest = max(busiest, len(ts))
		for i := range ts {
			for j := i + 1; j < len(ts); j++ {
				span := ts[j].Sub(ts[i]) + slack
				if allowed := run.burst + int(run.rate*span.Seconds()); j-i+1 > allowed {
					t.Errorf("%s: %d requests within %v, limiter allows %d", h, j-i+1, ts[j].Sub(ts[i]), allowed)
					for _, r := range w.Requests() {
						if r.Host == h {
							t.Logf("  %s %s %s", r.Time.Sub(ts[0]), r.Path, r.Conn)
						}
					}
					t.Logf("  %s", w.Describe(h))
					break
				}
			}
		}
		if d := w.CrawlDelay[h]; d > 0 {
			for i := 1; i < len(ts); i++ {
				if gap := ts[i].Sub(ts[i-1]); gap < d-slack {
					t.Errorf("%s: requests %v apart, Crawl-delay is %v", h, gap, d)
				}
			}
		}
	}
	t.Logf("busiest host got %d requests", busiest)
}
