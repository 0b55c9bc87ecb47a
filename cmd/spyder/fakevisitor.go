package main

import (
	"context"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
)

// fakeVisitor is the probe of the hidden `spyder run --fake-probe`, a test
// double for the probe alone: it contacts nothing and answers every host at
// once with the same small result (its domain node, a RESOLVES_TO edge to
// one of 256 documentation addresses, every step "ok"). Everything else a
// run does stays real (queue, leases, heartbeats, batcher, seen sets,
// sink, acks), so a load test measures that machinery and not the network.
type fakeVisitor struct {
	probeID, runID string
	now            func() time.Time
	delay          time.Duration // how long each host takes (--fake-probe-delay), or until ctx ends
}

// Visit implements worker.Prober.
func (f fakeVisitor) Visit(ctx context.Context, name host.Name) *spyder.Result {
	if f.delay > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(f.delay):
		}
	}
	now := f.now().Unix()
	h := fnv.New32a()
	h.Write([]byte(name))
	ip := "198.18.0." + strconv.Itoa(int(h.Sum32()%256)) // RFC 2544 benchmarking range
	ok := func(step string) spyder.StepOutcome { return spyder.StepOutcome{Step: step, Status: spyder.StatusOK} }
	return &spyder.Result{
		Host:    name,
		Domains: []spyder.DomainNode{{Host: name, Apex: name.Apex(), FirstSeen: now, LastSeen: now}},
		IPs:     []spyder.IPNode{{IP: ip, FirstSeen: now, LastSeen: now}},
		Edges: []spyder.Edge{{Type: spyder.ResolvesTo, Source: string(name), Target: ip, ObservedAt: now,
			ProbeID: f.probeID, RunID: f.runID}},
		Outcome: spyder.HostOutcome{Host: name, Steps: []spyder.StepOutcome{
			ok(spyder.StepDNS), ok(spyder.StepTLS), ok(spyder.StepRobots), ok(spyder.StepPage)}},
	}
}
