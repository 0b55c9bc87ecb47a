package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// fakeHosts returns n host names for --fake-probe runs.
func fakeHosts(n int) []string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = fmt.Sprintf("host%d.example", i)
	}
	return hs
}

// probeBeats is the probe list of `queue stats --json`.
type probeBeats struct {
	Probes []struct {
		ID       string `json:"id"`
		Spooled  int    `json:"spooled"`
		Held     int    `json:"held"`
		Inflight int    `json:"inflight"`
	} `json:"probes"`
}

func mustProbeBeats(t *testing.T, backend ...string) probeBeats {
	t.Helper()
	var pb probeBeats
	out := runApp(t, append([]string{"queue", "stats", "--json"}, backend...)...)
	if err := json.Unmarshal([]byte(out), &pb); err != nil {
		t.Fatalf("queue stats --json: %v: %q", err, out)
	}
	return pb
}

// TestE2E_StateDirIsOneProbes: a second probe given a state directory
// another probe holds stops at once with one line naming the holder; probes
// started alike without --state-dir, from one directory, each take a
// directory of their own.
func TestE2E_StateDirIsOneProbes(t *testing.T) {
	t.Parallel()
	backend := []string{"--redis", redistest.Addr(t), "--queue-key", redistest.Prefix(t)}
	runApp(t, append(append([]string{"queue", "seed"}, backend...), mustDomains(t, fakeHosts(50)))...)
	dir := filepath.Join(t.TempDir(), "state")
	run := func(extra ...string) *proc {
		return startSpyder(t, append(append([]string{"run", "--fake-probe", "--fake-probe-delay", "5s", "--concurrency", "2"}, backend...), extra...)...)
	}
	first := run("--state-dir", dir, "--probe", "p1")
	waitFor(t, 20*time.Second, "the first probe to hold its state dir", func() bool { return len(logLines(first.log(), "state_dir")) > 0 })

	second := run("--state-dir", dir, "--probe", "p2")
	start := time.Now()
	err := second.wait(t, 20*time.Second)
	lines := strings.Split(strings.TrimSpace(second.log()), "\n")
	last := lines[len(lines)-1]
	want := fmt.Sprintf("spyder: --state-dir %s is in use by another spyder process (pid %d, probe p1 on ", dir, first.cmd.Process.Pid)
	if err == nil || !strings.HasPrefix(last, want) || !strings.HasSuffix(last, "give each probe its own --state-dir") {
		t.Errorf("second probe on the same --state-dir: exit %v, last line %q; want exit 1 and a line starting %q", err, last, want)
	}
	t.Logf("refused after %v: %s", time.Since(start).Round(time.Millisecond), last)

	// Without --state-dir: the default directory, then NAME.2.
	a, b := run("--probe", "same"), run("--probe", "same")
	var dirs []string
	for _, p := range []*proc{a, b} {
		waitFor(t, 20*time.Second, "a default state dir", func() bool { return len(logLines(p.log(), "state_dir")) > 0 })
		dirs = append(dirs, logLines(p.log(), "state_dir")[0]["dir"].(string))
	}
	if !regexp.MustCompile(`^spyder-state/same-[0-9a-f]{8}(\.2)?$`).MatchString(dirs[0]) || dirs[0] == dirs[1] ||
		strings.TrimSuffix(dirs[0], ".2") != strings.TrimSuffix(dirs[1], ".2") {
		t.Errorf("default state dirs of two probes = %q, want spyder-state/same-<hash> and the same with .2", dirs)
	}
	for _, p := range []*proc{first, a, b} {
		p.cmd.Process.Signal(syscall.SIGTERM)
		if err := p.wait(t, 30*time.Second); err != nil {
			t.Errorf("probe after SIGTERM: %v\n%s", err, p.log())
		}
	}
}

// TestE2E_IngestSurvivesRedisLoss: nothing acknowledged is lost when Redis
// loses its data. Two probes crawl with --ingest pointing at an endpoint
// that is down, so every batch is spooled in each probe's own file. A
// snapshot is taken (`queue export`), Redis is flushed (FLUSHALL) midway,
// the snapshot is imported, and the endpoint comes up: every batch of
// every host acknowledged reaches the endpoint, at least once. Nothing is
// spooled in Redis, and `queue stats` shows what each probe holds.
func TestE2E_IngestSurvivesRedisLoss(t *testing.T) {
	t.Parallel()
	hosts := fakeHosts(300)
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	key := "{spyder}:queue"
	backend := []string{"--redis", srv.Addr, "--queue-key", key}
	runApp(t, append(append([]string{"queue", "seed"}, backend...), mustDomains(t, hosts))...)
	var down atomic.Bool
	down.Store(true)
	ingest, url := startIngest(t, down.Load)
	states := []string{filepath.Join(t.TempDir(), "state0"), filepath.Join(t.TempDir(), "state1")}
	start := func(extra ...string) []*proc {
		var ps []*proc
		for i, dir := range states {
			ps = append(ps, startSpyder(t, append(append([]string{"run", "--fake-probe", "--fake-probe-delay", "100ms",
				"--concurrency", "4", "--lease", "5s", "--probe", fmt.Sprintf("probe%d", i), "--state-dir", dir,
				"--ingest", url, "--ingest-retries", "0", "--ingest-timeout", "1s"}, backend...), extra...)...))
		}
		return ps
	}
	stop := func(ps []*proc) {
		for _, p := range ps {
			p.cmd.Process.Signal(syscall.SIGTERM)
			if err := p.wait(t, 60*time.Second); err != nil {
				t.Fatalf("probe after SIGTERM: %v\n%s", err, p.log())
			}
		}
	}
	probes := start()
	done := func() int64 { st := mustQueueStats(t, backend...); return st.Seen - st.Pending - st.Processing }
	waitFor(t, 60*time.Second, "a third of the hosts done", func() bool { return done() >= int64(len(hosts)/3) })
	snapshot := runApp(t, append([]string{"queue", "export"}, backend...)...)
	snapFile := filepath.Join(t.TempDir(), "snapshot.jsonl")
	if err := os.WriteFile(snapFile, []byte(snapshot), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "two thirds of the hosts done", func() bool { return done() >= int64(2*len(hosts)/3) })
	spooled := 0
	waitFor(t, 10*time.Second, "the probes' heartbeats to show their spools", func() bool {
		spooled = 0
		for _, p := range mustProbeBeats(t, backend...).Probes {
			spooled += p.Spooled
		}
		return spooled > 0
	})
	if n, err := c.XLen(context.Background(), key+":spool").Result(); err != nil || n != 0 {
		t.Errorf("XLEN %s:spool = %d, %v; want 0: batches go to the probes' own files", key, n, err)
	}
	if got, _ := ingest.snapshot(); got.Lines > 0 {
		t.Fatalf("endpoint accepted %d batches while down", got.Lines)
	}
	t.Logf("before FLUSHALL: the probes' heartbeats show %d batches spooled", spooled)

	if err := c.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range probes {
		waitFor(t, 30*time.Second, "queue_state_lost", func() bool { return len(logLines(p.log(), "queue_state_lost")) > 0 })
	}
	// As docs/guarantees.md's "When Redis loses its data" says: stop the probes (what
	// they spooled stays in their files), clear what they wrote since the
	// flush, import the snapshot, start them again.
	stop(probes)
	clearQueueKeys(t, srv.Addr, key)
	runApp(t, append(append([]string{"queue", "import"}, backend...), snapFile)...)
	down.Store(false)
	probes = start("--exit-when-empty")
	for _, p := range probes {
		if err := p.wait(t, 90*time.Second); err != nil {
			t.Fatalf("probe after the import: %v\n%s", err, p.log())
		}
	}
	got, _ := ingest.snapshot()
	counts := probeCounts(got.Probes)
	for _, h := range hosts {
		if counts[h] == 0 {
			t.Errorf("host %s, acknowledged, never reached the endpoint", h)
		}
	}
	t.Logf("%d batches delivered for %d hosts", got.Lines, len(hosts))
}

// TestE2E_OldRedisSpoolMovedOnce: batches an older spyder spooled in Redis
// ({key}:spool) are moved into the first probe's own file and delivered
// from there, once; the Redis stream is left empty and not used again.
func TestE2E_OldRedisSpoolMovedOnce(t *testing.T) {
	t.Parallel()
	addr, key := redistest.Addr(t), redistest.Prefix(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	old := []string{"old1.example", "old2.example", "old3.example"}
	for _, h := range old {
		b := fmt.Sprintf(`{"probe_id":"old","run_id":"default","batch_id":"b-%s","timestamp":1,"probes":[{"host":%q,"steps":[{"step":"dns","status":"ok"}]}]}`, h, h)
		if err := c.XAdd(ctx, &redis.XAddArgs{Stream: key + ":spool", Values: []any{"b", b}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ingest, url := startIngest(t, func() bool { return false })
	backend := []string{"--redis", addr, "--queue-key", key}
	state := filepath.Join(t.TempDir(), "state")
	for i := range 2 {
		p := startSpyder(t, append([]string{"run", "--fake-probe", "--exit-when-empty", "--domains", mustDomains(t, fakeHosts(5)),
			"--ingest", url, "--state-dir", state}, backend...)...)
		if err := p.wait(t, 60*time.Second); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, p.log())
		}
		moved := logLines(p.log(), "ingest_spool_moved")
		if i == 0 && (len(moved) != 1 || moved[0]["batches"] != float64(len(old))) {
			t.Errorf("first run: ingest_spool_moved lines %v, want one moving %d batches\n%s", moved, len(old), p.log())
		}
		if i == 1 && len(moved) != 0 {
			t.Errorf("second run moved batches again: %v", moved)
		}
	}
	if n, err := c.XLen(ctx, key+":spool").Result(); err != nil || n != 0 {
		t.Errorf("XLEN %s:spool = %d, %v; want 0", key, n, err)
	}
	got, _ := ingest.snapshot()
	checkWrittenOnce(t, append(old, fakeHosts(5)...), got.Probes, " to the ingest endpoint")
}

// TestE2E_RedisOutageCostsSeconds: Redis (with its data: appendonly) stops
// mid-crawl for longer than the lease and comes back on the same port.
// The two probes keep their in-flight hosts through the outage, renew their
// leases (expired meanwhile) as soon as Redis answers and hold off
// reclaiming, so no host is probed by a second probe, and the crawl ends
// about when it would have without the outage, plus the outage itself.
func TestE2E_RedisOutageCostsSeconds(t *testing.T) {
	t.Parallel()
	hosts := fakeHosts(240)
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	backend := []string{"--redis", srv.Addr, "--queue-key", "{spyder}:queue"}
	runApp(t, append(append([]string{"queue", "seed"}, backend...), mustDomains(t, hosts))...)
	const lease, outage = 4 * time.Second, 6 * time.Second
	var runs []*runOut
	for i := range 2 {
		r := &runOut{name: fmt.Sprintf("probe%d", i), path: filepath.Join(t.TempDir(), "out.jsonl")}
		r.p = startSpyder(t, append([]string{"run", "--fake-probe", "--fake-probe-delay", "1s", "--concurrency", "8",
			"--lease", lease.String(), "--exit-when-empty", "--probe", r.name, "--out", r.path}, backend...)...)
		runs = append(runs, r)
	}
	waitFor(t, 60*time.Second, "the first hosts written", func() bool { return written(t, runs) >= 8 })
	began, first := time.Now(), written(t, runs)
	waitFor(t, 60*time.Second, "a quarter of the hosts written", func() bool { return written(t, runs) >= len(hosts)/4 })
	before := written(t, runs)
	rate := float64(before-first) / time.Since(began).Seconds()
	stopped := time.Now()
	srv.Stop()
	time.Sleep(outage)
	srv.Restart(t)
	back := time.Now()
	t.Logf("Redis down from %s to %s", stopped.UTC().Format("15:04:05.000"), back.UTC().Format("15:04:05.000"))
	for _, r := range runs {
		if err := r.p.wait(t, 90*time.Second); err != nil {
			t.Fatalf("%s after the outage: %v\n%s", r.name, err, r.p.log())
		}
	}
	after := time.Since(back)
	left := float64(len(hosts) - before)
	t.Logf("a %v outage with --lease %v: %d hosts written before it (%.1f hosts/s); the last %.0f took %v after Redis came back, against %.1fs at that rate",
		outage, lease, before, rate, left, after.Round(100*time.Millisecond), left/rate)
	checkWrittenOnce(t, hosts, readOutputs(t, runs).Probes, "")
	for _, r := range runs {
		for _, msg := range []string{"lease_lost", "lease_reclaimed", "host_failed", "item_dead"} {
			if ls := logLines(r.p.log(), msg); len(ls) > 0 {
				t.Errorf("%s logged %s %d times, want none; the first at %v", r.name, msg, len(ls), ls[0]["time"])
			}
		}
		if len(logLines(r.p.log(), "queue_reachable")) == 0 {
			t.Errorf("%s did not log queue_reachable", r.name)
		}
	}
	if limit := time.Duration(left/rate*float64(time.Second)) + 10*time.Second; after > limit {
		t.Errorf("the crawl took %v after Redis came back, want under %v (the rest at the earlier rate, plus 10s)", after, limit)
	}
	if st := mustQueueStats(t, backend...); st.Pending != 0 || st.Processing != 0 || st.Dead != 0 {
		t.Errorf("queue stats = %+v, want every host done", st)
	}
}

// clearQueueKeys deletes the queue's state keys under key, as docs/guarantees.md's
// restore procedure does before `queue import`: the lists and lease set,
// and every bucket of the host table.
func clearQueueKeys(t *testing.T, addr, key string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	var keys []string
	for _, k := range []string{"", ":leases", ":dead", ":processing", ":processing-noticed"} {
		keys = append(keys, key+k)
	}
	table, err := c.Keys(context.Background(), key+":hosts#*").Result()
	if err != nil {
		t.Fatal(err)
	}
	keys = append(keys, table...)
	if err := c.Del(context.Background(), keys...).Err(); err != nil {
		t.Fatal(err)
	}
}
