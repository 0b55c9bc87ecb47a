package crawl_test

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/internal/gcpace"
	"github.com/spyder-crawler/spyder/resolver"
)

// BenchmarkCrawl crawls a generated world: 10,000
// hosts, 20 ms added to every DNS answer, 50 ms to every connect and HTTP
// response, 3% of hosts hanging, trickling forever or slow; the default
// limiter (1 request/s per host, burst 3), the default timeouts. It reports
// hosts/s end to end (slow tail included), the CPU time per host, the
// process's peak RSS (start-RSS-MiB is its RSS once the world is up, before
// the crawl), the RSS the crawl added per probe in flight, and the share of
// hosts whose probe hit a timeout:
//
//	go test -run '^$' -bench Crawl -benchtime 1x -cpuprofile cpu.out ./crawl
//
// KiB/in-flight is the highest RSS sampled (every 20 ms) less the start
// RSS, over in-flight: the most workers holding a probe at once up to that
// sample (RSS hardly falls, so the memory is that of the most probes held
// so far). max-in-flight is the most at any time; peak-heap-MiB,
// peak-stacks-MiB and peak-goroutines the runtime's heap objects, goroutine
// stacks and goroutines at their highest.
//
// With SPYDER_BENCH_WORLD=process the world runs in a child process (this
// test binary running TestWorldProcess) and the CPU and memory figures are
// the crawler's alone (getrusage of this process, less the memory
// sampler's own thread, reported as sampler-ms/host); the child passes its
// CA certificate over, so that certificates verify as in a real crawl,
// and where each world address leads, so that this process dials the
// world's servers itself as World.Dial would. Otherwise they count both
// sides.
//
// A loaded machine shows in timeout-%: DNS answers and handshakes that come
// too late make probes end early and cheap, so a run whose timeout-% is
// well above the quiet machine's (about 4%: the hanging and trickling
// hosts) says little about CPU or memory per host.
//
// SPYDER_BENCH_HOSTS, SPYDER_BENCH_WORKERS and SPYDER_BENCH_TIMEOUT (a Go
// duration) override the size, the worker count and HostTimeout;
// SPYDER_BENCH_DNS_LATENCY and SPYDER_BENCH_HTTP_LATENCY (Go durations)
// the world's latencies, so that many workers can be kept in flight
// without the 2 cores starving them (see benchWorld); SPYDER_BENCH_RAMP (a
// Go duration) spreads the workers' first probes over its length, so that
// they do not all handshake in the same second; SPYDER_BENCH_HEAPPROFILE
// names a file for a heap profile taken at the RSS peak. Memory per probe
// in flight at 4,096 workers, with all of them holding a probe at the peak
// and about 5% of the probes timing out on 2 shared cores (a probe lasts
// about 25 s, so some 160 start a second):
//
//	SPYDER_BENCH_WORLD=process SPYDER_BENCH_WORKERS=4096 SPYDER_BENCH_HOSTS=12000 \
//	SPYDER_BENCH_DNS_LATENCY=2s SPYDER_BENCH_HTTP_LATENCY=6s SPYDER_BENCH_TIMEOUT=120s \
//	SPYDER_BENCH_RAMP=15s go test -run '^$' -bench Crawl -benchtime 1x ./crawl
func BenchmarkCrawl(b *testing.B) {
	hosts := crawltest.EnvInt(b, "SPYDER_BENCH_HOSTS", 10_000)
	workers := crawltest.EnvInt(b, "SPYDER_BENCH_WORKERS", crawl.DefaultWorkers)
	timeout := crawltest.EnvDuration(b, "SPYDER_BENCH_TIMEOUT", crawl.DefaultHostTimeout)
	ramp := crawltest.EnvDuration(b, "SPYDER_BENCH_RAMP", 0)
	opts := benchWorld(b, hosts)
	gcpace.Start(gcpace.DefaultTarget) // as `spyder run` paces its collector
	var w target
	if os.Getenv("SPYDER_BENCH_WORLD") == "process" {
		p := startWorldProcess(b, hosts)
		w = target{p.info.Resolver, p.dial, p.roots(b), p.info.Seeds}
	} else {
		world := crawltest.Start(b, opts)
		if err := world.Warm(); err != nil { // sign the world's certificates before timing
			b.Fatal(err)
		}
		w = target{world.Resolver, world.Dial, world.RootCAs, world.Seeds}
	}
	runtime.GC()
	worldRSS, err := rssMiB()
	if err != nil {
		b.Skipf("no RSS to measure: %v", err)
	}
	cpu0, sys0 := cpuTime(b)
	var elapsed time.Duration
	var inFlight atomic.Int64
	peaks := sampleMemory(b, &inFlight, os.Getenv("SPYDER_BENCH_HEAPPROFILE"))
	timeouts := 0
	for b.Loop() {
		run := crawlTarget(b, w, crawlOptions{workers: workers, rate: 1, burst: 3, inFlight: &inFlight, ramp: ramp, mod: func(c *crawl.Config) {
			c.HostTimeout = timeout
			// Latencies above the defaults stretch the steps' timeouts
			// by as much, so that they still cut only what they cut at
			// the defaults.
			c.DNSTimeout = resolver.DefaultTimeout + max(0, opts.DNSLatency-defaultDNSLatency)
			c.ConnectTimeout = crawl.DefaultConnectTimeout + max(0, opts.HTTPLatency-defaultHTTPLatency)
			c.RequestTimeout = crawl.DefaultRequestTimeout + max(0, opts.HTTPLatency-defaultHTTPLatency)
		}})
		elapsed += run.elapsed
		run.logTimes(b)
		for k, n := range run.count {
			if strings.Contains(k, spyder.StatusTimeout) {
				timeouts += n
			}
		}
	}
	peaks.stop(b, worldRSS)
	probed := float64(len(w.Seeds) * b.N)
	b.ReportMetric(probed/elapsed.Seconds(), "hosts/s")
	// CPU per host: what the 2-core ceiling is, whatever else the machine
	// is running. The memory sampler is the benchmark's instrument, not
	// the crawler: its thread's CPU is reported apart and not counted.
	cpu, sys := cpuTime(b)
	b.ReportMetric(float64(cpu-cpu0-peaks.cpu)/float64(time.Millisecond)/probed, "cpu-ms/host")
	b.ReportMetric(float64(peaks.cpu)/float64(time.Millisecond)/probed, "sampler-ms/host")
	b.ReportMetric(float64(sys-sys0)/float64(time.Millisecond)/probed, "sys-ms/host")
	peak := procStatusMiB(b, "VmHWM")
	b.ReportMetric(peak, "peak-RSS-MiB")
	b.ReportMetric(worldRSS, "start-RSS-MiB")
	b.ReportMetric(100*float64(timeouts)/probed, "timeout-%")
}

// memPeaks samples the process's RSS, the runtime's heap objects and
// goroutine stacks and the probes in flight while a benchmark runs, to
// tell where its peak RSS went and over how many probes.
type memPeaks struct {
	done        chan struct{}
	wg          sync.WaitGroup
	heap, stack uint64
	goroutines  uint64
	classes     []metrics.Sample // the runtime's memory classes at the RSS peak
	rss         float64          // MiB, the highest sample
	cpu         time.Duration    // the sampler's own CPU, from start to stop
	atRSS       int64            // the most probes in flight up to that sample
	maxInFlight int64
}

// sampleMemory samples every 20 ms until stop. inFlight counts the workers
// holding a probe. With heapProfile set it writes a heap profile there at
// the peak: again each time RSS passes the last profiled RSS by 2%.
func sampleMemory(tb testing.TB, inFlight *atomic.Int64, heapProfile string) *memPeaks {
	m := &memPeaks{done: make(chan struct{})}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/sched/goroutines:goroutines"}}
	if heapProfile != "" {
		runtime.MemProfileRate = 16 << 10 // fine enough to split a few KiB a probe
	}
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/memory/classes/") && !strings.HasPrefix(d.Name, "/memory/classes/total") {
			m.classes = append(m.classes, metrics.Sample{Name: d.Name})
		}
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		// On a thread of its own, so that its CPU can be told apart.
		// Failures are reported with Errorf: FailNow is for the
		// benchmark's own goroutine.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cpu0, err := threadCPU()
		if err != nil {
			tb.Errorf("sampler: %v", err)
			return
		}
		defer func() {
			cpu, err := threadCPU()
			if err != nil {
				tb.Errorf("sampler: %v", err)
			}
			m.cpu = cpu - cpu0
		}()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		profiled := 0.0
		for {
			metrics.Read(s)
			m.heap, m.stack = max(m.heap, s[0].Value.Uint64()), max(m.stack, s[1].Value.Uint64())
			m.goroutines = max(m.goroutines, s[2].Value.Uint64())
			n := inFlight.Load()
			m.maxInFlight = max(m.maxInFlight, n)
			rss, err := rssMiB()
			if err != nil {
				tb.Errorf("sampler: %v", err)
				return
			}
			if rss > m.rss {
				// RSS hardly falls, so a later sample may top the peak
				// with fewer probes in flight: the memory is that of the
				// most in flight so far.
				m.rss, m.atRSS = rss, m.maxInFlight
				metrics.Read(m.classes)
				if heapProfile != "" && rss > profiled*1.02 {
					profiled = rss
					writeHeapProfile(tb, heapProfile)
				}
			}
			select {
			case <-m.done:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

func writeHeapProfile(tb testing.TB, path string) {
	f, err := os.Create(path)
	if err != nil {
		tb.Errorf("heap profile: %v", err)
		return
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		tb.Errorf("heap profile: %v", err)
	}
}

// stop ends the sampling and reports the peaks: the RSS the crawl added
// over startRSS (MiB) per probe in flight (the most in flight up to the
// RSS peak, reported as in-flight), the most in flight at any time, the
// heap objects and stacks.
func (m *memPeaks) stop(b *testing.B, startRSS float64) {
	close(m.done)
	m.wg.Wait()
	b.ReportMetric((m.rss-startRSS)*1024/float64(max(m.atRSS, 1)), "KiB/in-flight")
	b.ReportMetric(float64(m.atRSS), "in-flight")
	b.ReportMetric(float64(m.maxInFlight), "max-in-flight")
	b.ReportMetric(float64(m.heap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(m.stack)/(1<<20), "peak-stacks-MiB")
	b.ReportMetric(float64(m.goroutines), "peak-goroutines")
	for _, c := range m.classes {
		b.Logf("at the RSS peak: %-45s %7.1f MiB", c.Name, float64(c.Value.Uint64())/(1<<20))
	}
}

// The benchmark world's latencies unless SPYDER_BENCH_DNS_LATENCY or
// SPYDER_BENCH_HTTP_LATENCY say otherwise.
const (
	defaultDNSLatency  = 20 * time.Millisecond
	defaultHTTPLatency = 50 * time.Millisecond
)

// benchWorld is the benchmark's world of hosts hosts. A probe lasts about
// one DNS latency and three HTTP ones, so longer ones hold more probes in
// flight for the same CPU: what memory per probe in flight at a high
// worker count needs on 2 shared cores, where at the default latencies
// the probes queue for the CPU and time out.
func benchWorld(tb testing.TB, hosts int) crawltest.Options {
	return crawltest.Options{
		Hosts: hosts, Seed: 1, SlowFraction: 0.03, NoRequestLog: true,
		DNSLatency:  crawltest.EnvDuration(tb, "SPYDER_BENCH_DNS_LATENCY", defaultDNSLatency),
		HTTPLatency: crawltest.EnvDuration(tb, "SPYDER_BENCH_HTTP_LATENCY", defaultHTTPLatency),
	}
}

// procStatusMiB reads a kB field of /proc/self/status in MiB.
func procStatusMiB(tb testing.TB, field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				tb.Fatalf("%s: %v", field, err)
			}
			return float64(kb) / 1024
		}
	}
	tb.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// rssMiB reads the process's resident set size from /proc/self/statm, a
// fraction of the cost of /proc/self/status.
func rssMiB() (float64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/self/statm: %q: no resident size", b)
	}
	pages, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	return float64(pages*os.Getpagesize()) / (1 << 20), nil
}

// cpuTime returns the user and system CPU time the process used so far,
// and the system part of it.
func cpuTime(tb testing.TB) (total, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), time.Duration(ru.Stime.Nano())
}
