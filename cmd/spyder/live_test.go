package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/dashboard"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// liveDB makes a bbolt file holding n hosts (h00.example.com, …), of which
// the first `dead` went to dead with the error "disk on fire <host>".
func liveDB(t *testing.T, n, dead int) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "spyder.db")
	q, err := boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	hosts := make([]host.Name, n)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("h%02d.example.com", i))
	}
	ctx := t.Context()
	if _, err := q.Seed(ctx, hosts); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Lease(ctx, dead, time.Minute, 0)
	if err != nil || len(ls) != dead {
		t.Fatalf("Lease(%d) = %d, %v", dead, len(ls), err)
	}
	for _, l := range ls {
		if err := q.Fail(ctx, l, "disk on fire "+string(l.Item.Host), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

// spyderCmd runs the binary to its end and returns stdout; a failure
// fails the test with stderr.
func spyderCmd(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(mustBinary(t), args...)
	cmd.Dir = testDir(t) // where a fleet probe's default --state-dir goes
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPYDER_") && !strings.HasPrefix(kv, "REDIS_QUEUE_ADDR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("spyder %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// liveStats is `spyder queue stats --json`.
type liveStats struct {
	statsJSON
	Probes []struct {
		ID   string  `json:"id"`
		Rate float64 `json:"rate"`
		Done int64   `json:"done"`
	} `json:"probes"`
}

func liveQueueStats(t *testing.T, backend ...string) liveStats {
	t.Helper()
	var st liveStats
	out := spyderCmd(t, append([]string{"queue", "stats", "--json"}, backend...)...)
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("queue stats --json: %v: %q", err, out)
	}
	return st
}

// slowRun starts a standalone crawl of db that takes about 300 ms a host,
// three at a time, with extra flags.
func slowRun(t *testing.T, db string, extra ...string) (*proc, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.jsonl")
	args := append([]string{"run", "--db", db, "--out", out, "--fake-probe", "--fake-probe-delay", "300ms",
		"--concurrency", "3", "--probe", "laptop"}, extra...)
	p := startSpyder(t, args...)
	waitFor(t, 30*time.Second, "the control socket", func() bool {
		_, ok := dashboard.DialSocket(dashboard.SocketPath(db))
		return ok
	})
	return p, out
}

// TestLive_QueueCommandsReachRunningCrawl: while `spyder run` holds the
// bbolt file, `queue stats`, `dead list` and `dead retry` answer through
// its control socket with the crawl's live numbers, the retried hosts are
// crawled by the same run, and the socket is gone when it exits.
func TestLive_QueueCommandsReachRunningCrawl(t *testing.T) {
	t.Parallel()
	const hosts, dead = 60, 2
	db := liveDB(t, hosts, dead)
	p, out := slowRun(t, db)

	first := liveQueueStats(t, "--db", db)
	if first.Seen != hosts || first.Dead != dead || first.Processing < 1 || first.Processing > 3 ||
		first.Pending+first.Processing > hosts-dead {
		t.Errorf("stats of the running crawl = %+v, want %d seen, %d dead, 1-3 processing", first.statsJSON, hosts, dead)
	}
	waitFor(t, 10*time.Second, "pending to fall and the probe's heartbeat", func() bool {
		st := liveQueueStats(t, "--db", db)
		return st.Pending < first.Pending && len(st.Probes) == 1 && st.Probes[0].ID == "laptop" && st.Probes[0].Done > 0
	})
	text := spyderCmd(t, "queue", "stats", "--db", db)
	for _, want := range []string{"via the running spyder", "processing", "PROBE", "laptop"} {
		if !strings.Contains(text, want) {
			t.Errorf("queue stats lacks %q:\n%s", want, text)
		}
	}
	list := spyderCmd(t, "queue", "dead", "list", "--db", db)
	for _, want := range []string{"h00.example.com", "disk on fire h00.example.com", "h01.example.com", "disk on fire h01.example.com"} {
		if !strings.Contains(list, want) {
			t.Errorf("dead list lacks %q:\n%s", want, list)
		}
	}
	// The verbs that need the file to themselves say who holds it.
	if _, stderr, err := tryApp(t.Context(), "queue", "export", "--db", db); err == nil || !strings.Contains(err.Error(), "in use by a running `spyder run`") {
		t.Errorf("queue export on a running crawl's file = %v %s, want it to say a run holds the file", err, stderr)
	}
	if got := spyderCmd(t, "queue", "dead", "retry", "--db", db); !strings.Contains(got, "moved 2 dead items back to pending") {
		t.Errorf("dead retry said %q", got)
	}
	if err := p.wait(t, 60*time.Second); err != nil {
		t.Fatalf("run: %v\n%s", err, p.log())
	}
	if got := len(probeCounts(mustReadBatches(t, out).Probes)); got != hosts {
		t.Errorf("%d hosts written, want all %d (the retried ones too)", got, hosts)
	}
	if _, err := os.Lstat(dashboard.SocketPath(db)); !os.IsNotExist(err) {
		t.Errorf("control socket left after the run: %v", err)
	}
	if st := liveQueueStats(t, "--db", db); st.Pending != 0 || st.Dead != 0 || st.Processing != 0 {
		t.Errorf("stats after the run = %+v, want all done", st.statsJSON)
	}
}

// TestLive_StaleSocketBlocksNothing: a run killed with SIGKILL leaves its
// socket behind; `queue stats` then opens the file itself, and the next
// run replaces the socket and finishes.
func TestLive_StaleSocketBlocksNothing(t *testing.T) {
	t.Parallel()
	db := liveDB(t, 30, 0)
	p, _ := slowRun(t, db)
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t, 10*time.Second)
	if _, err := os.Lstat(dashboard.SocketPath(db)); err != nil {
		t.Fatalf("no stale socket after SIGKILL (the test needs one): %v", err)
	}
	if text := spyderCmd(t, "queue", "stats", "--db", db); strings.Contains(text, "via the running spyder") || !regexp.MustCompile(`seen\s+30\n`).MatchString(text) {
		t.Errorf("queue stats beside a stale socket:\n%s", text)
	}
	p2, _ := slowRun(t, db)
	if err := p2.wait(t, 60*time.Second); err != nil {
		t.Fatalf("run after a stale socket: %v\n%s", err, p2.log())
	}
	if strings.Contains(p2.log(), "control_socket") {
		t.Errorf("the second run could not make its socket:\n%s", p2.log())
	}
	if st := liveQueueStats(t, "--db", db); st.Pending != 0 || st.Processing != 0 {
		t.Errorf("stats after the second run = %+v, want all done", st.statsJSON)
	}
}

// TestQueueStats_DamagedProbeListKeepsCounts: a probe list Redis cannot
// read (its key holds a string) is reported on stderr, and the counts are
// printed anyway.
func TestQueueStats_DamagedProbeListKeepsCounts(t *testing.T) {
	t.Parallel()
	addr, key := redistest.Addr(t), redistest.Prefix(t)
	backend := []string{"--redis", addr, "--queue-key", key}
	runApp(t, append(append([]string{"queue", "seed"}, backend...), mustDomains(t, []string{"a.example.com"}))...)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if err := c.Set(t.Context(), key+":probes-expiry", "not a sorted set", 0).Err(); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := tryApp(t.Context(), append([]string{"queue", "stats"}, backend...)...)
	if err != nil || !regexp.MustCompile(`pending\s+1\n`).MatchString(out) || !strings.Contains(stderr, "probe list") {
		t.Errorf("queue stats with a damaged probe list = %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
}
