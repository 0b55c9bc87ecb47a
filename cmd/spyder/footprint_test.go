package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// Footprint bounds: what a finished crawl may keep per host, everything
// included (the host records, the output seen set, dead items, counters).
const (
	maxRedisBytesPerHost = 100
	maxBoltBytesPerHost  = 600
)

// TestFootprint crawls the simulated internet (the world of BenchmarkCrawl:
// 20 ms DNS, 50 ms HTTP, 3% slow hosts) twice, once with a fleet of two
// probes on a fresh redis-server and once standalone on a bbolt file, and
// fails when the state a finished crawl leaves is over maxRedisBytesPerHost
// (INFO memory used_memory after the crawl less before seeding) or
// maxBoltBytesPerHost (the file's size) a host. It runs only with
// SPYDER_FOOTPRINT=N, the number of hosts (100000 for the figures in
// docs/performance.md):
//
//	SPYDER_FOOTPRINT=100000 go test -count=1 -run '^TestFootprint$' -v -timeout 90m ./cmd/spyder/
//
// SPYDER_FOOTPRINT_BACKENDS=redis (or bbolt) measures one backend only.
func TestFootprint(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("SPYDER_FOOTPRINT"))
	if err != nil || n <= 0 {
		t.Skip("set SPYDER_FOOTPRINT=<hosts> to measure the bytes a crawl keeps per host")
	}
	start := time.Now()
	w := crawltest.Start(t, crawltest.Options{Hosts: n, Seed: 1, DNSLatency: 20 * time.Millisecond,
		HTTPLatency: 50 * time.Millisecond, SlowFraction: 0.03, NoRequestLog: true})
	if err := w.Warm(); err != nil {
		t.Fatal(err)
	}
	t.Logf("world of %d hosts up in %v", len(w.Seeds), time.Since(start).Round(time.Millisecond))
	list := mustDomains(t, w.Seeds)
	wargs := []string{"--resolver", w.Resolver, "--dial-proxy", startProxy(t, w), "--log-level", "warn", "--concurrency", "512"}
	only := os.Getenv("SPYDER_FOOTPRINT_BACKENDS")
	if only == "" || only == "redis" {
		perHost := footprintRedis(t, list, len(w.Seeds), wargs)
		t.Logf("redis: %.1f bytes of used_memory a host (%d hosts)", perHost, len(w.Seeds))
		if perHost > maxRedisBytesPerHost {
			t.Errorf("redis keeps %.1f bytes a host, want at most %d", perHost, maxRedisBytesPerHost)
		}
	}
	if only == "" || only == "bbolt" {
		perHost := footprintBolt(t, list, len(w.Seeds), wargs)
		t.Logf("bbolt: %.1f bytes of file a host (%d hosts)", perHost, len(w.Seeds))
		if perHost > maxBoltBytesPerHost {
			t.Errorf("bbolt keeps %.1f bytes a host, want at most %d", perHost, maxBoltBytesPerHost)
		}
	}
}

// footprintRedis seeds list into a fresh Redis, crawls it with two fleet
// probes until the queue is empty, and returns used_memory's growth a host.
func footprintRedis(t *testing.T, list string, hosts int, wargs []string) float64 {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	before := usedMemory(t, c)
	backend := []string{"--redis", srv.Addr, "--queue-key", "{spyder}:queue"}
	runApp(t, append([]string{"queue", "seed"}, append(backend, list)...)...)
	dir := t.TempDir()
	start := time.Now()
	for round := 0; ; round++ {
		var procs []*proc
		for i := range 2 {
			args := []string{"run", "--exit-when-empty", "--out", filepath.Join(dir, fmt.Sprintf("probe%d-%d.jsonl", i, round)),
				"--probe", fmt.Sprintf("probe%d", i)}
			procs = append(procs, startSpyder(t, append(append(args, backend...), wargs...)...))
		}
		for _, p := range procs {
			waitStopped(t, p)
		}
		if footprintDone(t, backend) || round == 20 {
			break
		}
	}
	t.Logf("redis crawl: %v", time.Since(start).Round(time.Second))
	after := usedMemory(t, c)
	stats := runApp(t, append([]string{"queue", "stats"}, backend...)...)
	t.Logf("used_memory %d before seeding, %d after the crawl\n%s", before, after, stats)
	logKeyMemory(t, c)
	return float64(after-before) / float64(hosts)
}

// logKeyMemory logs MEMORY USAGE summed by kind of key (bucket numbers,
// run names and store IDs left out), and Redis's own overheads.
func logKeyMemory(t *testing.T, c *redis.Client) {
	ctx := context.Background()
	sum, count := map[string]int64{}, map[string]int{}
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		kind := k
		if i := strings.LastIndexByte(kind, '#'); i >= 0 {
			kind = kind[:i+1] + "N"
		}
		if i := strings.Index(kind, ":replies:"); i >= 0 {
			kind = kind[:i] + ":replies:ID"
		}
		n, _ := c.MemoryUsage(ctx, k, 0).Result()
		sum[kind] += n
		count[kind]++
	}
	for kind, n := range sum {
		t.Logf("  %-40s %5d keys %10d bytes", kind, count[kind], n)
	}
	info, _ := c.Info(ctx, "memory").Result()
	for _, line := range strings.Split(info, "\n") {
		for _, f := range []string{"used_memory_scripts:", "used_memory_overhead:", "used_memory_dataset:", "used_memory_vm_eval:"} {
			if strings.HasPrefix(line, f) {
				t.Logf("  %s", strings.TrimSpace(line))
			}
		}
	}
}

// footprintBolt crawls list standalone into a new bbolt file and returns
// the file's size a host.
func footprintBolt(t *testing.T, list string, hosts int, wargs []string) float64 {
	dir := t.TempDir()
	db := filepath.Join(dir, "spyder.db")
	start := time.Now()
	for round := 0; ; round++ {
		args := []string{"run", "--db", db, "--out", filepath.Join(dir, fmt.Sprintf("graph-%d.jsonl", round))}
		if round == 0 {
			args = append(args, "--domains", list)
		}
		waitStopped(t, startSpyder(t, append(args, wargs...)...))
		if footprintDone(t, []string{"--db", db}) || round == 20 {
			break
		}
	}
	t.Logf("bbolt crawl: %v", time.Since(start).Round(time.Second))
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bbolt file %d bytes\n%s", fi.Size(), runApp(t, "queue", "stats", "--db", db))
	return float64(fi.Size()) / float64(hosts)
}

// waitStopped waits for p to exit. A run that stopped because the world's
// resolver did not answer in time (the world runs in this test process, on
// cores the crawl shares) handed its hosts back: the caller runs again.
func waitStopped(t *testing.T, p *proc) {
	t.Helper()
	if err := p.wait(t, 80*time.Minute); err != nil {
		if !strings.Contains(p.log(), "does not answer") {
			t.Fatalf("spyder run: %v\n%s", err, p.log())
		}
		t.Logf("a run stopped on a silent resolver (a loaded world); running again")
	}
}

// footprintDone reports whether the queue has nothing pending or in flight.
func footprintDone(t *testing.T, backend []string) bool {
	st := runApp(t, append([]string{"queue", "stats", "--json"}, backend...)...)
	return strings.Contains(st, `"pending":0`) && strings.Contains(st, `"processing":0`)
}

// usedMemory reads INFO memory's used_memory.
func usedMemory(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}
