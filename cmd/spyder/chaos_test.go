package main

// The chaos soak: a fleet of real `spyder run --redis` probes crawls the
// simulated internet with --ingest to an endpoint the test runs, while
// faults are injected at random: a probe SIGKILLed (and started again with
// the same command), SIGSTOPped past its lease (then SIGCONT), Redis
// restarted with its data, Redis restarted empty and the last `spyder queue
// export` imported, the ingest endpoint down and up, a probe's disk full
// (its --out on a small tmpfs, filled), and latency and connection resets
// between the probes and Redis or the endpoint (a proxy in the test: the
// kernel has no netem, see chaos_proxy_test.go). Afterwards every host
// must be done, every batch of every acknowledged host must have reached
// the endpoint, and every duplicate must be one docs/guarantees.md explains.
//
// `make test` runs a short version (about a minute); SPYDER_CHAOS=30m (make
// soak, CHAOS_DURATION) injects faults for that long over at least 20,000
// hosts (SPYDER_CHAOS_HOSTS). SPYDER_FAULT_SEED replays a schedule.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// chaosConfig sizes one chaos run.
type chaosConfig struct {
	faults     time.Duration // how long faults are injected
	hosts      int
	probes     int
	conc       int
	lease      time.Duration
	gapMin     time.Duration // between two faults
	gapMax     time.Duration
	exportGap  time.Duration // between two `queue export` snapshots
	drainLimit time.Duration // for the fleet to finish once faults stop
	long       bool
}

// chaosSettings reads SPYDER_CHAOS (the long run's fault duration) and
// SPYDER_CHAOS_HOSTS; without them, the short version make test runs.
func chaosSettings(t *testing.T) chaosConfig {
	c := chaosConfig{faults: 35 * time.Second, hosts: 1200, probes: 3, conc: 24, lease: 4 * time.Second,
		gapMin: 1500 * time.Millisecond, gapMax: 3500 * time.Millisecond, exportGap: 5 * time.Second, drainLimit: 2 * time.Minute}
	if s := os.Getenv("SPYDER_CHAOS"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("SPYDER_CHAOS=%q: want a duration such as 30m", s)
		}
		c = chaosConfig{faults: d, hosts: 20000, probes: 4, conc: 64, lease: 5 * time.Second,
			gapMin: 5 * time.Second, gapMax: 20 * time.Second, exportGap: 30 * time.Second, drainLimit: 10 * time.Minute, long: true}
	}
	if s := os.Getenv("SPYDER_CHAOS_HOSTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SPYDER_CHAOS_HOSTS=%q: want a positive number", s)
		}
		c.hosts = n
	}
	return c
}

// TestChaos_Fleet is the chaos soak (see the top of this file).
func TestChaos_Fleet(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos soak runs real processes for a minute or more")
	}
	// Not parallel: its fleet, world and faults load the machine enough
	// that the package's exact end-to-end crawls, run beside it, lose
	// pages to timeouts. Run first and alone, it adds its minute to the
	// package's time instead.
	cfg := chaosSettings(t)
	rnd := faultRand(t)
	w := crawltest.Start(t, crawltest.Options{Hosts: cfg.hosts, Seed: 77, HTTPLatency: 10 * time.Millisecond, NoRequestLog: true})
	c := newChaos(t, cfg, w, rnd)
	c.run()
	c.check()
}

// chaos is one soak: the world, Redis, the endpoint, the proxies, the
// fleet and the record of what was done to them. Everything runs on the
// test's goroutine except the proxies and the endpoint's server.
type chaos struct {
	t   *testing.T
	cfg chaosConfig
	w   *crawltest.World
	rnd *rand.Rand
	dir string

	srv       *redistest.Server
	direct    []string // backend flags straight to Redis (the operator's)
	redisPx   *chaosProxy
	ingest    *chaosEndpoint
	ingestPx  *chaosProxy
	probeArgs []string // the flags every probe shares
	stateFlag string   // the probes' local state dir flag, when the binary has one

	slots  []*chaosSlot
	seeded []string // hosts seeded so far, in order
	snap   *chaosSnapshot
	events []*chaosEvent
	active []*chaosEvent // faults begun and not yet ended
	wipes  []chaosWipe
	exits  []string // probe exits nothing injected explains
	start  time.Time
}

// chaosSnapshot is one `spyder queue export` and the hosts it holds done.
type chaosSnapshot struct {
	at   time.Time
	text string
	done map[string]bool
}

// chaosWipe is one restart of Redis without its data.
type chaosWipe struct {
	at       time.Time
	snap     *chaosSnapshot // the export imported after it (nil: none yet)
	restored time.Time      // when that import was done
	spoolLen int64          // batches in the Redis ingest spool just before
}

func newChaos(t *testing.T, cfg chaosConfig, w *crawltest.World, rnd *rand.Rand) *chaos {
	c := &chaos{t: t, cfg: cfg, w: w, rnd: rnd, dir: t.TempDir()}
	c.srv = redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	key := "{spyder}:queue"
	c.direct = []string{"--redis", c.srv.Addr, "--queue-key", key}
	c.redisPx = startChaosProxy(t, c.srv.Addr, rnd.Uint64())
	c.ingest = startChaosEndpoint(t)
	c.ingestPx = startChaosProxy(t, strings.TrimSuffix(strings.TrimPrefix(c.ingest.URL(), "http://"), "/ingest"), rnd.Uint64())
	help, _ := exec.Command(mustBinary(t), "run", "--help").CombinedOutput()
	if strings.Contains(string(help), "--state-dir") {
		c.stateFlag = "--state-dir"
	}
	t.Logf("probes keep undeliverable batches locally: %v (flag %q in spyder run --help)", c.stateFlag != "", "--state-dir")
	c.probeArgs = []string{"run", "--redis", c.redisPx.Addr(), "--queue-key", key,
		"--ingest", "http://" + c.ingestPx.Addr() + "/ingest", "--ingest-retries", "1", "--ingest-timeout", "2s",
		"--concurrency", strconv.Itoa(cfg.conc), "--lease", cfg.lease.String(), "--max-attempts", "1000",
		"--resolver", w.Resolver, "--dial-proxy", startProxy(t, w), "--host-timeout", "20s", "--log-level", "info"}
	for i := range cfg.probes {
		c.slots = append(c.slots, c.newSlot(fmt.Sprintf("probe%d", i+1)))
	}
	return c
}

// run seeds the hosts over the first 85% of the fault phase, injects
// faults until it ends, heals everything, seeds what is left, waits for
// the fleet to finish and stops it.
func (c *chaos) run() {
	t, cfg := c.t, c.cfg
	c.start = time.Now()
	chunks := 12
	chunk := (len(c.w.Seeds) + chunks - 1) / chunks
	seedEvery := time.Duration(float64(cfg.faults) * 0.85 / float64(chunks))
	c.seed(c.w.Seeds[:min(chunk, len(c.w.Seeds))])
	for _, s := range c.slots {
		c.launch(s)
	}
	nextSeed, nextExport := time.Now().Add(seedEvery), time.Now()
	nextFault, nextReport := time.Now().Add(c.gap()), time.Now().Add(time.Minute)
	kinds := c.kinds()
	// Every kind once first, then at random. In the first round Redis
	// loses its data soon after the endpoint went down, while batches wait
	// for it: what a probe holds then must survive the loss.
	order := pairUp(c.rnd.Perm(len(kinds)), kinds, "ingest-down", "redis-wipe")
	for time.Since(c.start) < cfg.faults {
		time.Sleep(100 * time.Millisecond)
		c.endDue(false)
		c.supervise()
		redisBusy := c.busy("redis-restart") || c.busy("redis-wipe")
		if !redisBusy && len(c.seeded) < len(c.w.Seeds) && time.Now().After(nextSeed) {
			c.seed(c.w.Seeds[len(c.seeded):min(len(c.seeded)+chunk, len(c.w.Seeds))])
			nextSeed = nextSeed.Add(seedEvery)
		}
		if !redisBusy && time.Now().After(nextExport) {
			c.export()
			nextExport = time.Now().Add(cfg.exportGap)
		}
		if cfg.long && time.Now().After(nextReport) {
			st, err := c.stats()
			t.Logf("%v: %d faults so far, %d of %d hosts seeded, queue %+v (err %v), %d deliveries",
				time.Since(c.start).Round(time.Second), len(c.events), len(c.seeded), len(c.w.Seeds), st, err, len(c.ingest.deliveries()))
			nextReport = nextReport.Add(time.Minute)
		}
		if time.Now().After(nextFault) {
			switch {
			case len(order) == 0:
				c.begin(kinds[c.rnd.IntN(len(kinds))], true)
			case c.begin(kinds[order[0]], false):
				order = order[1:]
				if len(order) > 0 && kinds[order[0]] == "redis-wipe" {
					nextFault = time.Now().Add(2 * time.Second)
					continue
				}
			default:
				continue // the next kind of the first round waits for its turn
			}
			nextFault = time.Now().Add(c.gap())
		}
	}
	t.Logf("faults stop after %v; healing and draining", time.Since(c.start).Round(time.Second))
	c.endDue(true)
	if len(c.seeded) < len(c.w.Seeds) { // after healing: Redis may have been down as the faults stopped
		c.seed(c.w.Seeds[len(c.seeded):])
	}
	c.drain()
}

// pairUp moves the index of kind b in order to just after kind a's.
func pairUp(order []int, kinds []string, a, b string) []int {
	ia, ib := slices.Index(kinds, a), slices.Index(kinds, b)
	if ia < 0 || ib < 0 {
		return order
	}
	order = slices.DeleteFunc(order, func(i int) bool { return i == ib })
	at := slices.Index(order, ia)
	return slices.Insert(order, at+1, ib)
}

// gap draws the time to the next fault.
func (c *chaos) gap() time.Duration {
	return c.cfg.gapMin + time.Duration(c.rnd.Int64N(int64(c.cfg.gapMax-c.cfg.gapMin)))
}

// seed queues hosts straight in Redis, as an operator does.
func (c *chaos) seed(hosts []string) {
	if len(hosts) == 0 {
		return
	}
	if _, stderr, err := tryApp(c.t.Context(), append(append([]string{"queue", "seed"}, c.direct...), mustDomains(c.t, hosts))...); err != nil {
		c.t.Fatalf("queue seed: %v\n%s", err, stderr)
	}
	c.seeded = append(c.seeded, hosts...)
}

// export takes a snapshot of the queue, as the cron line of docs/guarantees.md does.
func (c *chaos) export() {
	out, stderr, err := tryApp(c.t.Context(), append([]string{"queue", "export"}, c.direct...)...)
	if err != nil {
		c.t.Logf("queue export failed (kept the one before): %v %s", err, stderr)
		return
	}
	s := &chaosSnapshot{at: time.Now(), text: out, done: map[string]bool{}}
	pending, processing := openHostsOf(c.t, out)
	for _, l := range strings.Split(out, "\n") {
		if h, ok := strings.CutPrefix(l, `{"kind":"seen","host":"`); ok {
			h = h[:strings.IndexByte(h, '"')]
			if !pending[h] && !processing[h] {
				s.done[h] = true
			}
		}
	}
	c.snap = s
}

// drain waits for the healed fleet to finish every host and deliver its
// spool, then stops each probe with SIGTERM.
func (c *chaos) drain() {
	t := c.t
	limit := time.Now().Add(c.cfg.drainLimit)
	// A probe keeping batches on its own disk replays them every few
	// seconds: the endpoint is also to have taken nothing new for a while.
	const quiet = 12 * time.Second
	n, since := -1, time.Now()
	for {
		c.supervise()
		if got := len(c.ingest.deliveries()); got != n {
			n, since = got, time.Now()
		}
		st, err := c.stats()
		if err == nil && st.Pending == 0 && st.Processing == 0 && c.spoolLen() == 0 && time.Since(since) > quiet {
			break
		}
		if time.Now().After(limit) {
			t.Fatalf("the fleet did not finish within %v of the faults' end: %+v (err %v), %d batches spooled in Redis",
				c.cfg.drainLimit, st, err, c.spoolLen())
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("fleet finished %v after the start; stopping it", time.Since(c.start).Round(time.Second))
	for _, s := range c.slots {
		r := s.cur()
		r.p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, s := range c.slots {
		r := s.cur()
		if err := r.p.wait(t, 90*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v\n%s", r.name, err, tail(r.p.log(), 3000))
		}
		r.end = time.Now()
	}
}

// stats is `spyder queue stats --json`, straight from Redis.
func (c *chaos) stats() (statsJSON, error) {
	return queueStatsOf(c.t, c.direct...)
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// mustMkdir makes dir.
func mustMkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
