package main

import (
	"slices"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// fleetLimiterFallback is the log line of a fleet limiter that lost Redis
// and went on with a local one.
const fleetLimiterFallback = "redisstore: limiter falling back to the local limiter: redis unreachable"

// TestE2E_FleetAtHighLimit runs a fleet of three adaptive probes
// (--concurrency 8192) with the fleet limiter, where every visit outlasts
// the --lease (700 ms on each connect and response against a 2 s lease)
// and a probe's limit holds every host it leases at once. The latency
// leaves the connect and request timeouts (3 s and 4 s) room for a world
// slowed by the race detector and the tests beside it: a timeout here
// would be the world's, not the probe's. The heartbeats of
// hundreds of leases in flight keep every one of them (no lease is lost or
// reclaimed), the fleet limiter's Redis answers it throughout, every host
// is written exactly once, and the graph is the world's.
func TestE2E_FleetAtHighLimit(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 600, Seed: 41, HTTPLatency: 700 * time.Millisecond})
	addr, key := redistest.Addr(t), redistest.Prefix(t)
	backend := []string{"--redis", addr, "--queue-key", key, "--lease", "2s", "--fleet-limiter"}
	outs, procs := startFleet(t, w, 8192, backend...)
	for i, p := range procs {
		if err := p.wait(t, 120*time.Second); err != nil {
			t.Fatalf("probe %d: %v\n%s", i, err, p.log())
		}
	}
	for i, p := range procs {
		for _, msg := range []string{"lease_lost", "lease_reclaimed", "extend_error"} {
			if n := len(logLines(p.log(), msg)); n > 0 {
				t.Errorf("probe %d logged %s %d times; want every lease kept by its heartbeats", i, msg, n)
			}
		}
		if n := len(logLines(p.log(), fleetLimiterFallback)); n > 0 {
			t.Errorf("probe %d's fleet limiter fell back to a local one %d times; want Redis to answer it throughout", i, n)
		}
	}
	all := mustReadBatches(t, outs...)
	checkEdges(t, w, all.Edges)
	checkWrittenOnce(t, w.Seeds, all.Probes, " over the fleet")
	n := hostsAtOnce(w.Requests())
	t.Logf("%d hosts between their first and last request at once", n)
	if n < 300 {
		t.Errorf("at most %d hosts were between their first and last request at once; want at least 300 (a high limit)", n)
	}
}

// hostsAtOnce is the most hosts that were at once between the first and
// the last HTTP request the world saw from them.
func hostsAtOnce(reqs []crawltest.Request) int {
	first, last := map[string]time.Time{}, map[string]time.Time{}
	for _, r := range reqs {
		if f, ok := first[r.Host]; !ok || r.Time.Before(f) {
			first[r.Host] = r.Time
		}
		if r.Time.After(last[r.Host]) {
			last[r.Host] = r.Time
		}
	}
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for h, f := range first {
		edges = append(edges, edge{f, 1}, edge{last[h], -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return b.delta - a.delta // a start before an end at the same time
	})
	most, now := 0, 0
	for _, e := range edges {
		now += e.delta
		most = max(most, now)
	}
	return most
}
