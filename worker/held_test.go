package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/store/boltstore"
)

// withHeld gives f's loop a probe file of its own (a real bbolt file),
// as a fleet probe has, and returns it.
func withHeld(t *testing.T, f *loopFixture) *boltstore.Local {
	t.Helper()
	l, err := boltstore.OpenLocal(t.TempDir(), "test", boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f.l.cfg.Held = l.Held()
	f.l.holding.Store(true)
	return l
}

func mustHost(t *testing.T, s string) host.Name {
	t.Helper()
	h, err := host.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// probedOnce fails the test unless every host in out's batches was
// written exactly once, and returns them.
func probedOnce(t *testing.T, out string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var b struct {
			Probes []struct{ Host string } `json:"probes"`
		}
		if err := json.Unmarshal([]byte(line), &b); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		for _, p := range b.Probes {
			counts[p.Host]++
		}
	}
	for h, n := range counts {
		if n != 1 {
			t.Errorf("host %s written %d times, want once", h, n)
		}
	}
	return counts
}

// TestLoop_HeldWritesReplayedFirst: what an earlier run of the probe held
// in its file (discovered hosts, then an ack with its probe record) is
// applied before the new run leases anything: the acked host is done and
// not probed again, the held hosts are queued and probed, and the file is
// left empty.
func TestLoop_HeldWritesReplayedFirst(t *testing.T) {
	t.Parallel()
	_, _, q := startRedisQueue(t)
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	f := newLoopFixtureOn(t, q, crawltest.Options{Hosts: 20, Seed: 41}, 5, &lockedSink{s: s}, 5*time.Second)
	local := withHeld(t, f)
	ctx := t.Context()

	// The earlier run: it leased one host and finished it, and found two
	// hosts; neither write reached Redis.
	ls, err := q.Lease(ctx, 1, time.Minute, 0)
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %v, %v", ls, err)
	}
	found := []host.Name{mustHost(t, f.w.Seeds[10]), mustHost(t, f.w.Seeds[11])}
	for _, e := range []heldEntry{
		{Seed: found},
		{Acks: []heldAck{{ls[0], queue.Probe{Host: ls[0].Item.Host, At: time.Now().Unix(), Outcome: "ok"}}}},
	} {
		data, _ := json.Marshal(e)
		if err := local.Held().Put(ctx, data); err != nil {
			t.Fatal(err)
		}
	}

	f.run(t, ctx)
	if n := len(logLines(f.logs.String(), "held_replayed")); n == 0 {
		t.Errorf("no held_replayed line\n%s", f.logs)
	}
	probed := probedOnce(t, out.String())
	if probed[string(ls[0].Item.Host)] != 0 {
		t.Errorf("host %s, acked by the held write, was probed again", ls[0].Item.Host)
	}
	if len(probed) != 4+len(found) {
		t.Errorf("%d hosts written, want the 4 seeds not acked and the %d held ones", len(probed), len(found))
	}
	if st := f.stats(t); st.Pending != 0 || st.Processing != 0 || st.Seen != 5+int64(len(found)) {
		t.Errorf("stats = %+v, want all done and the held hosts seen", st)
	}
	if _, held, _ := local.Counts(ctx); held != 0 || f.l.Holding() {
		t.Errorf("%d writes still held (holding %v), want none", held, f.l.Holding())
	}
}

// TestLoop_HeldSeedThenAckInOrder: hosts discovered while Redis is down
// are kept in the probe's file, and the ack of the host that found them,
// made once Redis is back, queues behind them, so that the host is never
// acked before its discoveries are queued.
func TestLoop_HeldSeedThenAckInOrder(t *testing.T) {
	t.Parallel()
	srv, _, q := startRestartableRedis(t)
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	f := newLoopFixtureOn(t, q, crawltest.Options{Hosts: 20, Seed: 42}, 1, &lockedSink{s: s}, 5*time.Second)
	local := withHeld(t, f)
	ctx := t.Context()
	if !f.l.replayHeld(ctx) {
		t.Fatal("replayHeld on an empty file = false")
	}
	ls, err := q.Lease(ctx, 1, time.Minute, 0)
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %v, %v", ls, err)
	}
	f.l.track(ls)

	srv.Stop()
	found := []host.Name{mustHost(t, f.w.Seeds[5]), mustHost(t, f.w.Seeds[6])}
	if err := f.l.enqueue(ctx, found); err != nil {
		t.Fatalf("enqueue with Redis down = %v, want the hosts held", err)
	}
	srv.Restart(t)
	f.l.ackAll(ctx, ctx, []finished{{ls[0], queue.Probe{Host: ls[0].Item.Host, At: time.Now().Unix(), Outcome: "ok"}}})
	if _, held, _ := local.Counts(ctx); held != 2 {
		t.Fatalf("%d writes held, want 2: the seed, and the ack queued behind it", held)
	}
	_, first, _ := local.Held().Peek(ctx)
	if !strings.Contains(string(first), `"seed"`) {
		t.Errorf("first held write = %s, want the seed", first)
	}
	if !f.l.replayHeld(ctx) {
		t.Fatalf("replayHeld with Redis back = false\n%s", f.logs)
	}
	st := f.stats(t)
	if st.Seen != 3 || st.Pending != 2 || st.Processing != 0 {
		t.Errorf("stats after the replay = %+v, want the 2 held hosts pending and the first acked", st)
	}
	if f.l.Done() != 1 || f.l.Holding() {
		t.Errorf("done %d, holding %v; want 1, false", f.l.Done(), f.l.Holding())
	}
}

// TestLoop_OutageLongerThanLease: Redis stops for longer than the lease
// while hosts are in flight and finishing. Acks that fail are held in the
// probe's file; when Redis is back (with its data) the probe renews its
// expired leases at once and replays the acks before its own reclaim may
// run (held off after an outage), so no host is probed twice and the run
// ends soon after Redis returns.
func TestLoop_OutageLongerThanLease(t *testing.T) {
	t.Parallel()
	srv, _, q := startRestartableRedis(t)
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	const hosts = 40
	f := newLoopFixtureOn(t, q, crawltest.Options{Hosts: hosts, Seed: 43, HTTPLatency: 300 * time.Millisecond}, hosts, &lockedSink{s: s}, 10*time.Second)
	withHeld(t, f)
	f.l.cfg.Concurrency = 8
	f.l.cfg.LeaseTTL = 2 * time.Second
	f.l.cfg.ReclaimEvery = 500 * time.Millisecond

	back := runThroughOutage(t, f, srv, func() bool { return f.l.Done() >= 4 }, "an ack held",
		func() bool { return len(logLines(f.logs.String(), "queue_held")) > 0 },
		3*time.Second) // past every lease taken before the outage
	t.Logf("finished %v after Redis came back", time.Since(back).Round(time.Millisecond))
	for _, msg := range []string{"lease_reclaimed", "ack_error"} {
		if n := len(logLines(f.logs.String(), msg)); n > 0 {
			t.Errorf("%d %s lines, want 0\n%s", n, msg, f.logs)
		}
	}
	// An ack Redis ran just before it stopped, whose reply was lost, is
	// held and replayed, and the replay finds the lease gone: one
	// lease_lost "during held ack" for a host that is nonetheless done
	// and written once (checked below). Any other lost lease fails.
	landed := 0
	for _, l := range logLines(f.logs.String(), "lease_lost") {
		if l["during"] != "held ack" {
			t.Errorf("lease_lost %v: want none but held acks whose first try landed\n%s", l, f.logs)
		}
		landed++
	}
	if n := len(probedOnce(t, out.String())); n != hosts {
		t.Errorf("%d hosts written, want %d", n, hosts)
	}
	if st := f.stats(t); st.Pending != 0 || st.Processing != 0 || st.Dead != 0 || f.l.Done()+int64(landed) != hosts {
		t.Errorf("stats = %+v, done %d (%d held acks had landed); want all %d acked", st, f.l.Done(), landed, hosts)
	}
}

// TestLoop_HeartbeatRenewsWhenQueueReturns: the end of an outage makes
// every heartbeat extend its lease at once, not at its next tick (a third
// of the lease, 40s by default), so leases that ran out during the outage
// are renewed before any probe may reclaim them.
func TestLoop_HeartbeatRenewsWhenQueueReturns(t *testing.T) {
	t.Parallel()
	_, _, q := startRedisQueue(t)
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	f := newLoopFixtureOn(t, q, crawltest.Options{Hosts: 5, Seed: 44}, 1, &lockedSink{s: s}, 5*time.Second)
	f.l.cfg.LeaseTTL = time.Hour
	ctx := t.Context()
	ls, err := q.Lease(ctx, 1, time.Second, 0)
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %v, %v", ls, err)
	}
	hbCtx, stop := context.WithCancel(ctx)
	got := make(chan queue.Lease, 1)
	go func() { got <- f.l.heartbeat(hbCtx, ctx, ls[0]) }()
	f.l.link.failed()
	time.Sleep(50 * time.Millisecond)
	if d := f.l.link.answered(); d == 0 {
		t.Fatal("answered() after failed() = 0, want the outage's length")
	}
	time.Sleep(500 * time.Millisecond)
	stop()
	l := <-got
	if until := time.Until(l.Deadline); until < 50*time.Minute {
		t.Errorf("lease deadline %v from now after the queue returned, want about the 1h TTL: not renewed at once", until.Round(time.Second))
	}
}
