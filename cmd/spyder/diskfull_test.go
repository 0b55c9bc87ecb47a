package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
)

// Environment of TestE2E_FileSizeLimitExec.
const (
	fsizeExecEnv  = "E2E_FSIZE_EXEC"
	fsizeLimitEnv = "E2E_FSIZE_LIMIT"
	fsizeArgsEnv  = "E2E_FSIZE_ARGS"
)

// TestE2E_FileSizeLimitExec is a launcher, not a test: it limits the size
// of the files its process may write (RLIMIT_FSIZE, inherited across exec)
// and becomes the spyder binary. See startLimited.
func TestE2E_FileSizeLimitExec(t *testing.T) {
	bin := os.Getenv(fsizeExecEnv)
	if bin == "" {
		t.Skip("run by startLimited")
	}
	limit, err := strconv.ParseUint(os.Getenv(fsizeLimitEnv), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv(fsizeArgsEnv)), &args); err != nil {
		t.Fatal(err)
	}
	args = append([]string{bin}, args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "E2E_FSIZE_") {
			env = append(env, kv)
		}
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	t.Fatal(syscall.Exec(bin, args, env))
}

// startLimited runs the spyder binary with args like startSpyder, but no
// file it writes may grow past limit bytes: a write that would fails with
// EFBIG, as one fails with ENOSPC when the disk is full.
func startLimited(tb testing.TB, limit int64, args ...string) *proc {
	tb.Helper()
	argsJSON, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestE2E_FileSizeLimitExec$", "-test.count=1")
	return startProc(tb, cmd, fsizeExecEnv+"="+mustBinary(tb), fsizeLimitEnv+"="+strconv.FormatInt(limit, 10),
		fsizeArgsEnv+"="+string(argsJSON))
}

// TestE2E_DiskFull runs crawls whose files cannot grow, as on a full disk:
// the bbolt file (where the output's emitted set is the first thing that
// needs room), or the --out file. spyder must stop with one line naming the
// file and the cause, not fail every host to dead (it is not the hosts'
// fault) nor spin; no host may be lost, and a run with room afterwards
// finishes the crawl.
func TestE2E_DiskFull(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"db", "out"} {
		t.Run(which, func(t *testing.T) {
			t.Parallel()
			w := crawltest.Start(t, crawltest.Options{Hosts: 150, Seed: 31})
			dir := t.TempDir()
			db, out := filepath.Join(dir, "spyder.db"), filepath.Join(dir, "out.jsonl")
			runApp(t, "queue", "seed", "--db", db, mustDomains(t, w.Seeds))
			fi, err := os.Stat(db)
			if err != nil {
				t.Fatal(err)
			}
			full, limit := db, fi.Size()
			if which == "out" {
				// Room for the bbolt file (256 KiB after this crawl) but
				// for about 20 hosts' output only.
				full, limit = out, 320<<10
				if err := os.WriteFile(out, bytes.Repeat([]byte("\n"), 300<<10), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			wargs := worldArgs(t, w)
			args := append([]string{"run", "--db", db, "--out", out, "--concurrency", "16"}, wargs...)
			p := startLimited(t, limit, args...)
			err = p.wait(t, 60*time.Second)
			log := p.log()
			if err == nil {
				t.Fatalf("spyder run with a full disk exited 0; stderr:\n%s", log)
			}
			lines := strings.Split(strings.TrimSpace(log), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "spyder: ") || !strings.Contains(last, full) || !strings.Contains(last, "file too large") {
				t.Errorf("last line of stderr = %q, want one line naming %s and the cause", last, full)
			}
			if n := len(logLines(log, "item_dead")); n > 0 {
				t.Errorf("%d hosts sent to dead because the disk was full", n)
			}
			st := mustStats(t, []string{"--db", db})
			if st.Dead != 0 || st.Seen != int64(len(w.Seeds)) {
				t.Errorf("queue stats after the disk filled = %+v, want 0 dead, %d seen", st, len(w.Seeds))
			}
			t.Logf("after the disk filled: %+v; stderr:\n%s", st, log)

			// With room again, the crawl resumes and finishes.
			p = startSpyder(t, args...)
			if err := p.wait(t, 90*time.Second); err != nil {
				t.Fatalf("spyder run with room again: %v\n%s", err, p.log())
			}
			if st := mustStats(t, []string{"--db", db}); st.Pending != 0 || st.Processing != 0 || st.Dead != 0 {
				t.Errorf("queue stats after the resumed run = %+v, want everything done", st)
			}
			checkEverySeedWritten(t, w, mustReadBatches(t, out))
		})
	}
}

// queueStatsJSON is the output of `spyder queue stats --json`.
type queueStatsJSON struct {
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	Dead       int64 `json:"dead"`
	Seen       int64 `json:"seen"`
}
