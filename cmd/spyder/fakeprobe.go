package main

import (
	"context"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/host"
)

// fakeProbe is the probe of the hidden `spyder run --fake-probe`, a test
// double for the probe alone: it contacts nothing and answers every host at
// once with the same small result (its domain node, a RESOLVES_TO edge to
// one of 256 documentation addresses, every step "ok"). Everything else a
// run does stays real (queue, leases, heartbeats, batcher, seen sets,
// sink, acks), so a load test measures that machinery and not the network.
type fakeProbe struct {
	probeID, runID string
	now            func() time.Time
	delay          time.Duration // how long each host takes (--fake-probe-delay), or until ctx ends
}

// ProbeHost implements worker.Prober.
func (f fakeProbe) ProbeHost(ctx context.Context, name host.Name) *crawl.Result {
	if f.delay > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(f.delay):
		}
	}
	host := string(name)
	now := f.now().Unix()
	h := fnv.New32a()
	h.Write([]byte(host))
	ip := "198.18.0." + strconv.Itoa(int(h.Sum32()%256)) // RFC 2544 benchmarking range
	ok := func(step string) crawl.StepOutcome { return crawl.StepOutcome{Step: step, Status: crawl.StatusOK} }
	return &crawl.Result{
		Host:    host,
		Domains: []crawl.DomainNode{{Host: host, Apex: crawl.Apex(host), FirstSeen: now, LastSeen: now}},
		IPs:     []crawl.IPNode{{IP: ip, FirstSeen: now, LastSeen: now}},
		Edges: []crawl.Edge{{Type: crawl.ResolvesTo, Source: host, Target: ip, ObservedAt: now,
			ProbeID: f.probeID, RunID: f.runID}},
		Outcome: crawl.ProbeOutcome{Host: host, Steps: []crawl.StepOutcome{
			ok(crawl.StepDNS), ok(crawl.StepTLS), ok(crawl.StepRobots), ok(crawl.StepPage)}},
	}
}
