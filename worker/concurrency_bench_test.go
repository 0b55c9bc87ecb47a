package worker

import (
	"context"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/concurrency"
	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/limiter"
	"github.com/spyder-crawler/spyder/metrics"
	"github.com/spyder-crawler/spyder/store/boltstore"
)

// BenchmarkConcurrency crawls a simulated world with the shipped loop and
// crawler, once per mode, and reports hosts/s, the edges' recall and
// precision against the world's, the limit at the end and at its highest,
// the visits handed back for overload and the share of hosts written
// with a timeout. A mode is fixed:N (--concurrency N --fixed-concurrency)
// or adaptive:N (--concurrency N, the default). The world: 10,000 hosts,
// 100 ms added to every DNS answer and 150 ms to every connect and HTTP
// response, no slow hosts, no per-host rate limit (every host is its own
// site), all in this process on the machine's cores:
//
//	SPYDER_BENCH_MODES=fixed:1024,adaptive:8192 go test -run '^$' -bench Concurrency -benchtime 1x -timeout 30m ./worker/
//
// SPYDER_BENCH_HOSTS, SPYDER_BENCH_DNS_LATENCY and SPYDER_BENCH_HTTP_LATENCY
// (Go durations) change the world; SPYDER_BENCH_LOG=1 writes the loop's
// log (each move of the limit among it) to stderr.
func BenchmarkConcurrency(b *testing.B) {
	opts := crawltest.Options{Hosts: crawltest.EnvInt(b, "SPYDER_BENCH_HOSTS", 10_000), Seed: 34, NoRequestLog: true,
		DNSLatency:  crawltest.EnvDuration(b, "SPYDER_BENCH_DNS_LATENCY", 100*time.Millisecond),
		HTTPLatency: crawltest.EnvDuration(b, "SPYDER_BENCH_HTTP_LATENCY", 150*time.Millisecond)}
	w := crawltest.Start(b, opts)
	if err := w.Warm(); err != nil {
		b.Fatal(err)
	}
	modes := os.Getenv("SPYDER_BENCH_MODES")
	if modes == "" {
		modes = "fixed:1024,adaptive:1024"
	}
	for _, mode := range strings.Split(modes, ",") {
		kind, n, ok := strings.Cut(mode, ":")
		size, err := strconv.Atoi(n)
		if !ok || err != nil || (kind != "fixed" && kind != "adaptive") {
			b.Fatalf("SPYDER_BENCH_MODES: %q is not fixed:N or adaptive:N", mode)
		}
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				r := crawlWorld(b, w, concurrency.New(concurrency.Config{Max: size, Fixed: kind == "fixed"}))
				r.report(b, w)
			}
		})
	}
}

// worldRun is what one crawl of a world wrote, and how it went.
type worldRun struct {
	elapsed  time.Duration
	maxLimit int
	state    concurrency.State
	results  *collect
}

// crawlWorld crawls every seed of w with the shipped loop and crawler
// under lim, the queue a bbolt file, and returns what was written.
func crawlWorld(tb testing.TB, w *crawltest.World, lim *concurrency.Limit) *worldRun {
	tb.Helper()
	q, err := boltstore.Open(filepath.Join(tb.TempDir(), "spyder.db"), boltstore.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer q.Close()
	hosts := make([]host.Name, 0, len(w.Seeds))
	for _, s := range w.Seeds {
		h, err := host.Parse(s)
		if err != nil {
			tb.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	if _, err := q.Seed(tb.Context(), hosts); err != nil {
		tb.Fatal(err)
	}
	rl := limiter.New(0, 1)
	defer rl.Close()
	c, err := crawl.New(crawl.Config{Resolver: w.Resolver, RootCAs: w.RootCAs, Dial: w.Dial, Limiter: rl})
	if err != nil {
		tb.Fatal(err)
	}
	out := &collect{}
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("SPYDER_BENCH_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	l := New(q, c, out, log, metrics.New(rl), Config{
		Concurrency: lim.Max(), LeaseTTL: time.Minute, MaxAttempts: 3, Grace: time.Minute,
		ExitWhenEmpty: true, ReclaimEvery: time.Minute, Limit: lim,
	})
	run := &worldRun{results: out}
	stop := make(chan struct{})
	var peak sync.WaitGroup
	peak.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			st := lim.State()
			run.maxLimit = max(run.maxLimit, st.Limit)
			if i%5 == 0 && os.Getenv("SPYDER_BENCH_LOG") != "" {
				log.Debug("signals", "limit", st.Limit, "in_flight", st.Inflight, "sched_p99", st.Signals.SchedP99, "cpu", st.Signals.CPU, "rate", int(st.Rate), "requeued", st.Overload)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	start := time.Now()
	if err := l.Run(context.Background()); err != nil {
		tb.Fatalf("Run() = %v", err)
	}
	run.elapsed = time.Since(start)
	close(stop)
	peak.Wait()
	run.state = lim.State()
	return run
}

// report reports r's figures against w.
func (r *worldRun) report(b *testing.B, w *crawltest.World) {
	recall, precision := r.results.score(w)
	b.ReportMetric(float64(len(w.Seeds))/r.elapsed.Seconds(), "hosts/s")
	b.ReportMetric(recall, "recall")
	b.ReportMetric(precision, "precision")
	b.ReportMetric(float64(r.state.Limit), "limit")
	b.ReportMetric(float64(r.maxLimit), "max-limit")
	b.ReportMetric(float64(r.state.Overload), "requeued")
	b.ReportMetric(100*float64(r.results.timedOut())/float64(len(w.Seeds)), "timeout-%")
	b.ReportMetric(0, "ns/op")
}

// collect is an output that keeps every result, at once durable.
type collect struct {
	mu      sync.Mutex
	results []*spyder.Result
}

func (c *collect) Add(_ context.Context, r *spyder.Result) error {
	c.mu.Lock()
	c.results = append(c.results, r)
	c.mu.Unlock()
	return nil
}

// timedOut counts the results written with a timeout.
func (c *collect) timedOut() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.results {
		if timedOut(r) {
			n++
		}
	}
	return n
}

// score returns the recall and precision of the edges written against w's.
func (c *collect) score(w *crawltest.World) (recall, precision float64) {
	type key struct{ t, s, d string }
	want := map[key]bool{}
	for _, e := range w.Expected {
		want[key{e.Type, string(e.Source), string(e.Target)}] = true
	}
	got := map[key]bool{}
	c.mu.Lock()
	for _, r := range c.results {
		for _, e := range r.Edges {
			got[key{e.Type, string(e.Source), string(e.Target)}] = true
		}
	}
	c.mu.Unlock()
	tp := 0
	for k := range got {
		if want[k] {
			tp++
		}
	}
	return float64(tp) / math.Max(1, float64(len(want))), float64(tp) / math.Max(1, float64(len(got)))
}
