package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestE2E_RedisRefusesWrites: a fleet probe whose Redis stops taking
// writes stops with one line giving Redis's reason, instead of failing
// every host through its attempts to dead; once Redis takes writes again
// the crawl finishes. Three causes: over maxmemory with noeviction (OOM),
// unable to persist (MISCONF: its last background save failed) and a
// read-only replica (READONLY).
func TestE2E_RedisRefusesWrites(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name            string
		refuse, restore func(t *testing.T, c *redis.Client)
	}{
		{"OOM", fillRedis, func(t *testing.T, c *redis.Client) { mustDo(t, c, "CONFIG", "SET", "maxmemory", "0") }},
		{"MISCONF", failSaves, func(t *testing.T, c *redis.Client) {
			mustDo(t, c, "CONFIG", "SET", "dir", t.TempDir())
			mustSave(t, c, "ok")
		}},
		{"READONLY", func(t *testing.T, c *redis.Client) {
			mustDo(t, c, "REPLICAOF", "127.0.0.1", "1") // a primary that is not there: the data stays, writes are refused
		}, func(t *testing.T, c *redis.Client) { mustDo(t, c, "REPLICAOF", "NO", "ONE") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testRedisRefusesWrites(t, tt.name, tt.refuse, tt.restore)
		})
	}
}

func testRedisRefusesWrites(t *testing.T, reason string, refuse, restore func(*testing.T, *redis.Client)) {
	w := crawltest.Start(t, crawltest.Options{Hosts: 150, Seed: 33})
	srv := redistest.Start(t, "--enable-protected-configs", "yes")
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	backend := []string{"--redis", srv.Addr, "--queue-key", "spyder:queue"}
	runApp(t, append([]string{"queue", "seed"}, append(backend, mustDomains(t, w.Seeds))...)...)
	refuse(t, c)

	out := filepath.Join(t.TempDir(), "out.jsonl")
	state := filepath.Join(t.TempDir(), "state")
	args := append(append([]string{"run", "--exit-when-empty", "--out", out, "--concurrency", "16", "--state-dir", state}, backend...), worldArgs(t, w)...)
	p := startSpyder(t, args...)
	err := p.wait(t, 60*time.Second)
	log := p.log()
	if err == nil {
		t.Fatalf("spyder run on a Redis refusing writes exited 0; stderr:\n%s", log)
	}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "spyder: ") || !strings.Contains(last, reason) {
		t.Errorf("last line of stderr = %q, want one line saying Redis refuses writes (%s)", last, reason)
	}
	if n := len(logLines(log, "item_dead")) + len(logLines(log, "host_failed")); n > 0 {
		t.Errorf("%d hosts failed or sent to dead because Redis refused writes", n)
	}
	t.Logf("stderr:\n%s", log)

	// Once Redis takes writes, the crawl finishes.
	restore(t, c)
	p = startSpyder(t, append(args, "--lease", "5s")...)
	if err := p.wait(t, 90*time.Second); err != nil {
		t.Fatalf("spyder run with Redis taking writes again: %v\n%s", err, p.log())
	}
	if st := mustStats(t, backend); st.Pending != 0 || st.Processing != 0 || st.Dead != 0 {
		t.Errorf("queue stats after the resumed run = %+v, want everything done", st)
	}
	checkEverySeedWritten(t, w, mustReadBatches(t, out))
}

// mustDo runs one Redis command, failing the test on error.
func mustDo(t *testing.T, c *redis.Client, args ...any) {
	t.Helper()
	if err := c.Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("redis %v: %v", args, err)
	}
}

// failSaves makes Redis refuse writes as one that cannot persist does:
// its save directory is removed and a background save fails, and with
// stop-writes-on-bgsave-error (the default) writes get MISCONF.
func failSaves(t *testing.T, c *redis.Client) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mustDo(t, c, "CONFIG", "SET", "stop-writes-on-bgsave-error", "yes")
	mustDo(t, c, "CONFIG", "SET", "save", "3600 1") // MISCONF needs save points
	mustDo(t, c, "CONFIG", "SET", "dir", dir)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	mustSave(t, c, "err")
	if err := c.Set(context.Background(), "probe-write", "1", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "MISCONF") {
		t.Fatalf("a write after the failed save = %v, want MISCONF", err)
	}
}

// mustSave runs BGSAVE and waits until INFO persistence reports the save
// ended with status (ok or err).
func mustSave(t *testing.T, c *redis.Client, status string) {
	t.Helper()
	ctx := context.Background()
	if err := c.BgSave(ctx).Err(); err != nil && status == "ok" {
		t.Fatalf("BGSAVE: %v", err)
	}
	waitFor(t, 20*time.Second, "the background save to end with "+status, func() bool {
		info := c.Info(ctx, "persistence").Val()
		return strings.Contains(info, "rdb_bgsave_in_progress:0") && strings.Contains(info, "rdb_last_bgsave_status:"+status)
	})
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
