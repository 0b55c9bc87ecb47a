package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
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
