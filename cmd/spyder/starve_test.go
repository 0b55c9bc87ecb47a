package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
)

// TestE2E_StarvedBesideBurner runs spyder on one CPU (taskset, so Go sees
// GOMAXPROCS 1) beside four processes that spin on the same CPU for the
// first seconds of the crawl, every host of the world let in at once
// (--concurrency 800 --fixed-concurrency) and a host timeout of 1.5 s that
// the starved visits overrun. The world has no slow host, so a timeout
// would be the process's own: none is written, the visits that timed out
// while the process was saturated having gone back to the queue
// (requeued_overload) and been visited again.
func TestE2E_StarvedBesideBurner(t *testing.T) {
	t.Parallel()
	if raceBuild() {
		// The spyder under test is never built with -race, but the world
		// and the proxy, in this process, are: they become the slow side,
		// and their timeouts are rightly the hosts' results.
		t.Skip("the race detector makes the world slower than the starved run")
	}
	taskset := mustShell(t, "taskset") // util-linux
	w := crawltest.Start(t, crawltest.Options{Hosts: 800, Seed: 47, NoRequestLog: true})
	if err := w.Warm(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db, out := filepath.Join(dir, "spyder.db"), filepath.Join(dir, "graph.jsonl")
	if err := startSpyder(t, "queue", "seed", "--db", db, mustDomains(t, w.Seeds)).wait(t, time.Minute); err != nil {
		t.Fatalf("queue seed: %v", err)
	}
	var burners []*exec.Cmd
	for range 4 {
		burner := exec.Command(taskset, "-c", "0", "sh", "-c", "while :; do :; done")
		if err := burner.Start(); err != nil {
			t.Fatal(err)
		}
		burners = append(burners, burner)
		t.Cleanup(func() { burner.Process.Kill(); burner.Wait() })
	}
	p := startProc(t, exec.Command(taskset, "-c", "0", mustBinary(t), "run", "--db", db, "--out", out, "--probe", "starved",
		"--rate", "0", "--concurrency", "800", "--fixed-concurrency", "--host-timeout", "1500ms", "--log-level", "debug",
		"--resolver", w.Resolver, "--dial-proxy", startProxy(t, w)))
	// The burners spin until the starvation bit (a second after the first
	// visit was handed back), or for 20 s: for good, a host would time out
	// at every visit.
	go func() {
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end) && !strings.Contains(p.log(), `"requeued_overload"`); {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Second)
		for _, b := range burners {
			b.Process.Signal(syscall.SIGKILL)
		}
	}()
	if err := p.wait(t, 5*time.Minute); err != nil {
		t.Fatalf("run: %v\n%s", err, loadTail(p.log(), 3000))
	}
	got := mustReadBatches(t, out)
	checkWrittenOnce(t, w.Seeds, got.Probes, "")
	for _, pr := range got.Probes {
		for _, s := range pr.Steps {
			refused := strings.HasPrefix(s.Detail, "limiter:") || strings.Contains(s.Detail, "exceeds the host deadline")
			if !refused && (s.Status == spyder.StatusTimeout || strings.Contains(s.Detail, "timeout")) {
				t.Errorf("%s written with a timeout: %+v", pr.Host, s)
			}
		}
	}
	requeued := len(logLines(p.log(), "requeued_overload"))
	if requeued == 0 {
		t.Errorf("no visit requeued for overload: the burners did not starve the run")
	}
	t.Logf("%d visits requeued for overload", requeued)
}
