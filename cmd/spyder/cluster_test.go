package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestE2E_FleetSurvivesSIGKILL_Cluster is TestE2E_FleetSurvivesSIGKILL on
// a 3-master Redis Cluster named by its node list: the queue is split into
// the default 64 shards over the masters, and every host still gets done.
func TestE2E_FleetSurvivesSIGKILL_Cluster(t *testing.T) {
	t.Parallel()
	c := redistest.SharedCluster(t)
	key := redistest.Prefix(t)
	fleetSurvivesSIGKILL(t, strings.Join(c.Addrs(), ","), key)
	out := runApp(t, "queue", "stats", "--redis", c.Addrs()[0], "--queue-key", key)
	if !strings.Contains(out, "600") {
		t.Errorf("queue stats on the cluster after the crawl:\n%s\nwant the 600 hosts seen", out)
	}
	_, errOut, err := tryApp(t.Context(), "queue", "stats", "--redis", c.Addrs()[0], "--queue-key", key, "--shards", "8")
	if err == nil || !strings.Contains(errOut+err.Error(), "--shards 8 disagrees with the 64 shards") {
		t.Errorf("queue stats --shards 8 on a 64-shard queue: err %v, stderr %q; want it refused", err, errOut)
	}
}

// TestE2E_FleetRidesOutFailover: three probes crawl on a 3-master cluster
// with a replica per master; the master of some shards is killed with
// SIGKILL mid-crawl. Its replica takes over, the probes find it (retrying
// with backoff, not in a loop) and every seeded host is still done, by
// probes that exit 0 once the queue is empty.
func TestE2E_FleetRidesOutFailover(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, 1)
	w := crawltest.Start(t, crawltest.Options{Hosts: 600, Seed: 16, HTTPLatency: 20 * time.Millisecond})
	backend := []string{"--redis", strings.Join(c.Addrs(), ","), "--lease", "3s"}
	outs, procs := startFleet(t, w, 16, backend...)
	waitFor(t, 60*time.Second, "the fleet to write output", func() bool {
		return len(mustReadBatches(t, outs...).Probes) >= 60
	})
	victim := c.Masters(t)[1]
	// Under load a replica can fall back to a full resync; killing its
	// master then would test what asynchronous replication loses (the
	// probes see the queue's state lost and stop), not riding out a
	// failover.
	waitReplica(t, victim.Addr)
	victim.Stop()
	start := time.Now()
	if err := c.WaitOK(30 * time.Second); err != nil {
		t.Fatalf("the cluster did not fail over: %v", err)
	}
	t.Logf("replica took over %v after the kill", time.Since(start).Round(100*time.Millisecond))
	for i, p := range procs {
		if err := p.wait(t, 120*time.Second); err != nil {
			t.Fatalf("probe %d: %v\n%s", i, err, p.log())
		}
	}
	counts := probeCounts(mustReadBatches(t, outs...).Probes)
	for _, h := range w.Seeds {
		if counts[h] == 0 {
			t.Errorf("host %s never written after a master was killed", h)
		}
	}
	if t.Failed() {
		t.Logf("queue stats:\n%s", runApp(t, "queue", "stats", "--redis", c.Masters(t)[0].Addr))
		t.Logf("dead:\n%s", runApp(t, "queue", "dead", "list", "--redis", c.Masters(t)[0].Addr))
		for i, p := range procs {
			for _, ev := range []string{"fail_error", "ack_error", "lease_error", "reclaim_error"} {
				for _, l := range logLines(p.log(), ev) {
					t.Logf("probe %d: %v", i, l)
				}
			}
		}

	}
	for i, p := range procs {
		errs := 0
		for _, ev := range []string{"lease_error", "ack_error", "extend_error", "fail_error", "reclaim_error"} {
			errs += len(logLines(p.log(), ev))
		}
		t.Logf("probe %d logged %d errors while the master was away", i, errs)
		if errs > 200 {
			t.Errorf("probe %d logged %d errors: retrying in a loop, not with backoff", i, errs)
		}
	}
}

// TestQueue_ExportImportAcrossShardCounts: `queue export` from the 64
// shards of a cluster imports into 3 shards on one server, into bbolt and
// back into the cluster under another key, every record unchanged.
func TestQueue_ExportImportAcrossShardCounts(t *testing.T) {
	t.Parallel()
	c := redistest.SharedCluster(t)
	dir := t.TempDir()
	var hosts []string
	for i := range 300 {
		hosts = append(hosts, fmt.Sprintf("h%d.site%d.org", i, i%50))
	}
	list := filepath.Join(dir, "list.txt")
	if err := os.WriteFile(list, []byte(strings.Join(hosts, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cluster := []string{"--redis", strings.Join(c.Addrs(), ","), "--queue-key", redistest.Prefix(t)}
	runApp(t, append([]string{"queue", "seed"}, append(cluster, list)...)...)
	first := sortedLines(runApp(t, append([]string{"queue", "export"}, cluster...)...))
	if len(first) != 600 {
		t.Fatalf("export of 300 seeded hosts has %d lines, want 600 (pending and seen)", len(first))
	}
	hops := [][]string{
		{"--redis", redistest.Addr(t), "--queue-key", redistest.Prefix(t), "--shards", "3"},
		{"--db", filepath.Join(dir, "q.db")},
		{"--redis", c.Addrs()[1], "--queue-key", redistest.Prefix(t)},
	}
	prev := first
	for _, to := range hops {
		file := filepath.Join(dir, "state.jsonl")
		if err := os.WriteFile(file, []byte(strings.Join(prev, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		runApp(t, append(append([]string{"queue", "import"}, to...), file)...)
		prev = sortedLines(runApp(t, append([]string{"queue", "export"}, to...)...))
		if diff := cmp.Diff(first, prev); diff != "" {
			t.Fatalf("export after import into %v differs (-first +now):\n%s", to, diff)
		}
	}
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return lines
}
