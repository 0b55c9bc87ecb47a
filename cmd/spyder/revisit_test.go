package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
)

// TestE2E_CrawlOverTime crawls a world, then on the same queue: a second
// run probes nothing (standalone, it fails saying so); `queue retry --outcome` queues exactly the hosts whose
// last probe ended so, and the next run probes those; `run --revisit`
// probes every host again once its last probe is older than the age. Each
// run's output holds every node and edge once. On both backends.
func TestE2E_CrawlOverTime(t *testing.T) {
	t.Parallel()
	onBothBackends(t, testCrawlOverTime)
}

func testCrawlOverTime(t *testing.T, backend []string) {
	w := crawltest.Start(t, crawltest.Options{Hosts: 80, Seed: 41})
	wargs := worldArgs(t, w)
	dir := t.TempDir()
	queueArgs := slices.DeleteFunc(slices.Clone(backend), func(s string) bool { return s == "--exit-when-empty" })
	standalone := !slices.Contains(backend, "--redis")
	tryRun := func(name string, extra ...string) (output, error, string) {
		t.Helper()
		out := filepath.Join(dir, name+".jsonl")
		args := append(append(append([]string{"run", "--out", out, "--run", name}, backend...), extra...), wargs...)
		p := startSpyder(t, args...)
		err := p.wait(t, 90*time.Second)
		return mustReadBatches(t, out), err, p.log()
	}
	run := func(name string, extra ...string) output {
		t.Helper()
		out, err, log := tryRun(name, extra...)
		if err != nil {
			t.Fatalf("spyder run %s: %v\n%s", name, err, log)
		}
		return out
	}

	first := run("r1", "--domains", mustDomains(t, w.Seeds))
	checkOnce(t, first)
	if got := probeCounts(first.Probes); len(got) != len(w.Seeds) {
		t.Fatalf("first run probed %d hosts, want %d", len(got), len(w.Seeds))
	}
	// Standalone, a run with nothing to crawl says so and fails; a fleet
	// probe with --exit-when-empty simply finds the queue empty.
	again, err, log := tryRun("r2")
	if len(again.Probes) != 0 || (err == nil) == standalone {
		t.Errorf("a second run over the done queue probed %d hosts and ended with %v, want 0 and failure only standalone\n%s",
			len(again.Probes), err, log)
	}

	// The hosts whose last probe the world made fail in a way that may pass,
	// as docs/operating.md lists them (written out here, not taken from the code
	// under test).
	transient := regexp.MustCompile(`^(timeout|servfail|error|connect_error|http_5[0-9][0-9])$`)
	var want []string
	seen := map[string]int{}
	for _, p := range first.Probes {
		seen[p.Summary()]++
		if transient.MatchString(p.Summary()) {
			want = append(want, string(p.Host))
		}
	}
	if len(want) == 0 || len(want) == len(w.Seeds) {
		t.Fatalf("the world gave %d hosts of %d a transient outcome (%v): nothing to tell apart", len(want), len(w.Seeds), seen)
	}
	msg := runApp(t, append([]string{"queue", "retry", "--outcome", "transient"}, queueArgs...)...)
	if wantMsg := fmt.Sprintf("moved %d done hosts back to pending", len(want)); !strings.Contains(msg, wantMsg) {
		t.Errorf("queue retry said %q, want %q", msg, wantMsg)
	}
	retried := run("r3")
	checkOnce(t, retried)
	got := hostsProbed(retried)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("after queue retry --outcome the run probed %v, want %v", got, want)
	}

	// A probe's time is kept in whole seconds and --revisit picks only
	// probes surely older than its cutoff, so every probe of r3 is picked
	// only once a whole second more has passed: 2.1s is not enough when r4
	// starts quickly after r3's last probe.
	time.Sleep(3100 * time.Millisecond)
	revisited := run("r4", "--revisit", "2s")
	checkOnce(t, revisited)
	all := slices.Clone(w.Seeds)
	slices.Sort(all)
	if got := hostsProbed(revisited); !slices.Equal(got, all) {
		t.Errorf("run --revisit 2s probed %d hosts, want all %d", len(got), len(all))
	}
}

// hostsProbed lists the hosts out has an outcome for, sorted and once each.
func hostsProbed(out output) []string {
	var hs []string
	for h := range probeCounts(out.Probes) {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	return hs
}
