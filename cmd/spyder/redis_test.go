package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"spyder/crawl"
	"spyder/crawl/crawltest"
	"spyder/store/redisstore"
	"spyder/store/redisstore/redistest"
)

// TestE2E_RedisRefusesWrites: a fleet probe whose Redis stops taking
// writes (over maxmemory with noeviction, as a queue's Redis should be
// configured) stops with one line saying so, instead of failing every host
// through its attempts to dead; once Redis has room the crawl finishes.
func TestE2E_RedisRefusesWrites(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 150, Seed: 33})
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	ctx := context.Background()
	backend := []string{"--redis", srv.Addr, "--queue-key", "spyder:queue"}
	runApp(t, append([]string{"queue", "seed"}, append(backend, mustDomains(t, w.Seeds))...)...)
	fillRedis(t, c)

	out := filepath.Join(t.TempDir(), "out.jsonl")
	args := append(append([]string{"run", "--exit-when-empty", "--out", out, "--concurrency", "16"}, backend...), worldArgs(t, w)...)
	p := startSpyder(t, args...)
	err := p.wait(t, 60*time.Second)
	log := p.log()
	if err == nil {
		t.Fatalf("spyder run on a Redis refusing writes exited 0; stderr:\n%s", log)
	}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "spyder: ") || !strings.Contains(last, "OOM") {
		t.Errorf("last line of stderr = %q, want one line saying Redis refuses writes (OOM)", last)
	}
	if n := len(logLines(log, "item_dead")) + len(logLines(log, "host_failed")); n > 0 {
		t.Errorf("%d hosts failed or sent to dead because Redis was full", n)
	}
	st := mustStats(t, backend)
	if st.Dead != 0 || st.Pending+st.Processing != int64(len(w.Seeds))-int64(len(mustReadBatches(t, out).Probes)) {
		t.Errorf("queue stats after Redis filled = %+v, want 0 dead and every unwritten host pending or leased", st)
	}
	t.Logf("after Redis filled: %+v; stderr:\n%s", st, log)

	// With room again, the crawl finishes.
	if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	p = startSpyder(t, append(args, "--lease", "5s")...)
	if err := p.wait(t, 90*time.Second); err != nil {
		t.Fatalf("spyder run with room again: %v\n%s", err, p.log())
	}
	if st := mustStats(t, backend); st.Pending != 0 || st.Processing != 0 || st.Dead != 0 {
		t.Errorf("queue stats after the resumed run = %+v, want everything done", st)
	}
	checkEverySeedWritten(t, w, mustReadBatches(t, out))
}

// fillRedis makes the Redis of c refuse writes as a full one does: under
// noeviction, with maxmemory below what it uses.
func fillRedis(t *testing.T, c *redis.Client) {
	t.Helper()
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "100kb"}} {
		if err := c.ConfigSet(context.Background(), kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoop_EnqueueRefusedStopsBeforeAck: in continuous mode, when Redis
// will not take the discovered hosts (over maxmemory), the host that found
// them is not acked as done (its discoveries would be lost): the run stops
// with the cause and its leases go back to pending, none failed or dead.
func TestLoop_EnqueueRefusedStopsBeforeAck(t *testing.T) {
	t.Parallel()
	_, c, q := startRedisQueue(t)
	var out bytes.Buffer
	sink, _ := crawl.NewJSONSink(&out, crawl.FormatBatch)
	f := newLoopFixtureOn(t, q, crawltest.Options{Hosts: 60, Seed: 24}, 10, &lockedSink{s: sink}, 5*time.Second)
	f.l.continuous = true
	f.l.seen.Store(10)
	fillRedis(t, c)

	err := f.l.run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "enqueue discovered hosts") || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("loop.run = %v, want the enqueue's OOM error\n%s", err, f.logs)
	}
	st := f.stats(t)
	if st.Dead != 0 || st.Processing != 0 || st.Seen != 10 || st.Pending+f.l.done.Load() != 10 {
		t.Errorf("stats = %+v with %d done, want every seed done or pending again, none dead", st, f.l.done.Load())
	}
	if st.Pending == 0 {
		t.Errorf("every seed acked; want those whose discoveries were refused left pending\n%s", f.logs)
	}
	for _, msg := range []string{"host_failed", "item_dead"} {
		if n := strings.Count(f.logs.String(), `"msg":"`+msg+`"`); n > 0 {
			t.Errorf("%d %s lines, want 0: Redis refusing writes is not the host's fault", n, msg)
		}
	}
}

// TestLoop_AckWaitsOutRedisRestart: probes that finish while Redis is down
// ack once it is back, instead of giving up and leaving their hosts to be
// probed again when the leases expire.
func TestLoop_AckWaitsOutRedisRestart(t *testing.T) {
	t.Parallel()
	silenceRedis.Do(func() { redis.SetLogger(quietRedis{}) }) // as spyder run does
	srv, _, q := startRedisQueue(t, "--appendonly", "yes", "--appendfsync", "always")
	var out bytes.Buffer
	sink, _ := crawl.NewJSONSink(&out, crawl.FormatBatch)
	const hosts = 20
	f := newLoopFixtureOn(t, q, crawltest.Options{Hosts: hosts, Seed: 26, HTTPLatency: 400 * time.Millisecond}, hosts, &lockedSink{s: sink}, 10*time.Second)
	f.l.concurrency = hosts
	f.l.leaseTTL = 30 * time.Second // past the test: an ack given up on would stall it

	done := make(chan error, 1)
	go func() { done <- f.l.run(t.Context()) }()
	waitFor(t, 10*time.Second, "half the hosts leased", func() bool { return f.stats(t).Processing >= hosts/2 })
	srv.Stop()
	waitFor(t, 20*time.Second, "acks failing", func() bool {
		return strings.Contains(f.logs.String(), `"msg":"ack_retry"`) || strings.Contains(f.logs.String(), `"msg":"ack_error"`)
	})
	time.Sleep(time.Second) // the other probes finish and retry too
	srv.Restart(t)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("loop.run: %v\n%s", err, f.logs)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("loop.run did not finish within 20s of Redis coming back\n%s", f.logs)
	}
	if n := f.l.done.Load(); n != hosts {
		t.Errorf("done = %d, want %d", n, hosts)
	}
	for _, msg := range []string{"ack_error", "lease_lost", "lease_reclaimed"} {
		if n := strings.Count(f.logs.String(), `"msg":"`+msg+`"`); n > 0 {
			t.Errorf("%d %s lines, want 0: the acks were to wait Redis out\n%s", n, msg, f.logs)
		}
	}
	if st := f.stats(t); st.Pending != 0 || st.Processing != 0 || st.Dead != 0 {
		t.Errorf("stats = %+v, want every host acked", st)
	}
}

// startRedisQueue starts a redis-server of the test's own with args and
// opens the queue on it.
func startRedisQueue(t *testing.T, args ...string) (*redistest.Server, *redis.Client, *redisstore.Store) {
	t.Helper()
	srv := redistest.Start(t, args...)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	q, err := redisstore.Open(t.Context(), c, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return srv, c, q
}
