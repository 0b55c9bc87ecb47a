package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/redisstore"
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
	f.l.spool.holding.Store(true)
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
		{Acks: []heldAck{{ls[0], queue.Visit{Host: ls[0].Item.Host, At: time.Now().Unix(), Outcome: "ok"}}}},
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
	if !f.l.spool.replayHeld(ctx) {
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
	f.l.acker.ackAll(ctx, []finished{{ls[0], queue.Visit{Host: ls[0].Item.Host, At: time.Now().Unix(), Outcome: "ok"}}})
	if _, held, _ := local.Counts(ctx); held != 2 {
		t.Fatalf("%d writes held, want 2: the seed, and the ack queued behind it", held)
	}
	_, first, _ := local.Held().Peek(ctx)
	if !strings.Contains(string(first), `"seed"`) {
		t.Errorf("first held write = %s, want the seed", first)
	}
	if !f.l.spool.replayHeld(ctx) {
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
//
// The queue's clock, not the wall's, makes the outage longer than the
// lease: the lease is longer than the test may take (the wait for the
// run to get under way alone gives up after 20s), so no lease can run out
// before the outage however slowly a loaded machine runs the heartbeats,
// and the clock jumps past every lease while Redis is down, so every lease
// taken before the outage has run out when it comes back.
func TestLoop_OutageLongerThanLease(t *testing.T) {
	t.Parallel()
	clock := &skewClock{}
	srv, _, q := startRestartableRedisWith(t, redisstore.Options{Now: clock.Now})
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	const hosts = 40
	f := newLoopFixtureOn(t, q, crawltest.Options{Hosts: hosts, Seed: 43, HTTPLatency: 300 * time.Millisecond}, hosts, &lockedSink{s: s}, 10*time.Second)
	withHeld(t, f)
	watch := watchLoop(f)
	const ttl = 30 * time.Second
	f.l.cfg.Concurrency = 8
	f.l.cfg.LeaseTTL = ttl
	f.l.cfg.ReclaimEvery = 500 * time.Millisecond

	back := runThroughOutage(t, f, srv, func() bool { return f.l.Done() >= 4 }, "an ack held",
		func() bool { return len(logLines(f.logs.String(), "queue_held")) > 0 },
		func() {
			// A Reclaim sent before the loop saw the outage (it sends none
			// after) must have failed, as it would in an outage as long as
			// the lease: else it could reach Redis when it is back, with no
			// holdoff, and the jump would make that a reclaim.
			waitFor(t, 20*time.Second, "a Reclaim under way to fail", func() bool { return watch.reclaiming.Load() == 0 })
			clock.Advance(ttl + time.Second)
		})
	t.Logf("finished %v after Redis came back", time.Since(back).Round(time.Millisecond))
	if n := len(logLines(f.logs.String(), "ack_error")); n > 0 {
		t.Errorf("%d ack_error lines, want 0\n%s", n, f.logs)
	}
	// No lease the loop held was reclaimed: its host would have been
	// leased to it again. A Lease that Redis ran just before it stopped,
	// whose reply was lost, left leases no probe got: those are reclaimed,
	// and their hosts leased once.
	if hs := watch.leasedTwice(); len(hs) > 0 {
		t.Errorf("hosts %v leased twice: a lease the loop held was reclaimed\n%s", hs, f.logs)
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
	f, watch, ls := heartbeatFixture(t, 44)
	hbCtx, stop := context.WithCancel(t.Context())
	got := make(chan queue.Lease, 1)
	go func() { got <- f.l.heartbeat(hbCtx, nil, ls) }()
	waitUntil(t, 10*time.Second, "the heartbeat's first Extend, at once", func() bool {
		return watch.renewed.Load() == 1
	})
	f.l.link.failed()
	if d := f.l.link.answered(); d == 0 {
		t.Fatal("answered() after failed() = 0, want the outage's length")
	}
	// The heartbeat may not be waiting yet for the end of that outage: end
	// outages until it renews again (its tick is 20 minutes away).
	waitUntil(t, 10*time.Second, "the lease renewed after an outage", func() bool {
		if watch.renewed.Load() > 1 {
			return true
		}
		f.l.link.failed()
		f.l.link.answered()
		return false
	})
	stop()
	l := <-got
	if until := time.Until(l.Deadline); until < 50*time.Minute {
		t.Errorf("lease deadline %v from now after the queue returned, want about the 1h TTL: not renewed", until.Round(time.Second))
	}
}

// TestLoop_HeartbeatRenewsWhenQueueReturnsMidCall: an Extend fails while
// the queue is down, and the queue answers again (another call of the
// loop got through) before the heartbeat waits once more, here while it
// logs the failure: the lease is still renewed at once, not at the next
// tick.
func TestLoop_HeartbeatRenewsWhenQueueReturnsMidCall(t *testing.T) {
	t.Parallel()
	f, watch, ls := heartbeatFixture(t, 45)
	f.l.log = slog.New(hookHandler{Handler: f.l.log.Handler(), msg: "extend_error", do: func() { f.l.link.answered() }})
	watch.failNext(func() error {
		f.l.link.failed() // the outage this call meets
		return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	})
	hbCtx, stop := context.WithCancel(t.Context())
	got := make(chan queue.Lease, 1)
	go func() { got <- f.l.heartbeat(hbCtx, nil, ls) }() // its first Extend fails
	waitUntil(t, 10*time.Second, "the lease renewed after the outage that ended during the failed call", func() bool {
		return watch.renewed.Load() > 0
	})
	stop()
	if until := time.Until((<-got).Deadline); until < 50*time.Minute {
		t.Errorf("lease deadline %v from now, want about the 1h TTL", until.Round(time.Second))
	}
}

// TestLoop_NoHeartbeatBeforeFirstBeat: a probe in flight holds a timer, not
// a heartbeat goroutine, until its first beat is due (a third of the lease
// TTL); one that ends before it extends nothing and keeps its lease as
// leased. A lease whose first beat came has its heartbeat running, which
// is how the count of heartbeats is known to see them. Not parallel: it
// counts the heartbeats of the whole process.
func TestLoop_NoHeartbeatBeforeFirstBeat(t *testing.T) {
	f, watch, ls := heartbeatFixture(t, 46)
	beats := make([]*beating, 50)
	for i := range beats {
		beats[i] = f.l.beat(t.Context(), &ls)
	}
	if n := heartbeats(); n != 0 {
		t.Errorf("%d heartbeat goroutines with 50 probes in flight before their first beat, want 0", n)
	}
	for _, b := range beats {
		if l := b.end(); l.ID != ls.ID || !l.Deadline.Equal(ls.Deadline) {
			t.Errorf("end() = %s until %v, want the lease as leased (%s until %v)", l.ID, l.Deadline, ls.ID, ls.Deadline)
		}
	}
	if n := watch.renewed.Load(); n != 0 {
		t.Errorf("%d Extend calls for probes that ended before their first beat, want 0", n)
	}

	f.l.cfg.LeaseTTL = 1500 * time.Millisecond // first beat 500 ms in, past the leased 1 s
	b := f.l.beat(t.Context(), &ls)
	waitUntil(t, 10*time.Second, "the first beat's Extend", func() bool { return watch.renewed.Load() > 0 })
	if n := heartbeats(); n != 1 {
		t.Errorf("%d heartbeat goroutines once the first beat came, want 1", n)
	}
	if l := b.end(); !l.Deadline.After(ls.Deadline) {
		t.Errorf("end() after a beat = lease until %v, want it extended past %v", l.Deadline, ls.Deadline)
	}
}

// heartbeats counts the goroutines of the process running Loop.heartbeat.
func heartbeats() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "worker.(*Loop).heartbeat(")
}

// heartbeatFixture is a loop over a Redis queue with a lease TTL of an
// hour (heartbeats tick every 20 minutes), its queue watched, and one
// host leased for a second.
func heartbeatFixture(t *testing.T, seed int64) (*loopFixture, *watchQueue, queue.Lease) {
	t.Helper()
	_, _, q := startRedisQueue(t)
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	f := newLoopFixtureOn(t, q, crawltest.Options{Hosts: 5, Seed: seed}, 1, &lockedSink{s: s}, 5*time.Second)
	f.l.cfg.LeaseTTL = time.Hour
	watch := watchLoop(f)
	ls, err := q.Lease(t.Context(), 1, time.Second, 0)
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %v, %v", ls, err)
	}
	return f, watch, ls[0]
}

// hookHandler is a log handler that calls do when a record with message
// msg is logged, before writing it.
type hookHandler struct {
	slog.Handler
	msg string
	do  func()
}

func (h hookHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.do()
	}
	return h.Handler.Handle(ctx, r)
}
