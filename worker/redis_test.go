package worker

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestLoop_EnqueueRefusedStopsBeforeAck: in continuous mode, when Redis
// will not take the discovered hosts (over maxmemory), the host that found
// them is not acked as done (its discoveries would be lost): the run stops
// with the cause and its leases go back to pending, none failed or dead.
func TestLoop_EnqueueRefusedStopsBeforeAck(t *testing.T) {
	t.Parallel()
	_, c, q := startRedisQueue(t)
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	f := newLoopFixtureOn(t, q, crawltest.Options{Hosts: 60, Seed: 24}, 10, &lockedSink{s: s}, 5*time.Second)
	f.l.cfg.Continuous = true
	f.l.seen.Store(10)
	fillRedis(t, c)

	err := f.l.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "enqueue discovered hosts") || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("Loop.Run = %v, want the enqueue's OOM error\n%s", err, f.logs)
	}
	st := f.stats(t)
	if st.Dead != 0 || st.Processing != 0 || st.Seen != 10 || st.Pending+f.l.done.Load() != 10 {
		t.Errorf("stats = %+v with %d done, want every seed done or pending again, none dead", st, f.l.done.Load())
	}
	if st.Pending == 0 {
		t.Errorf("every seed acked; want those whose discoveries were refused left pending\n%s", f.logs)
	}
	for _, msg := range []string{"host_failed", "item_dead"} {
		if n := strings.Count(f.logs.String(), `"msg":"`+msg+`"`); n > 0 {
			t.Errorf("%d %s lines, want 0: Redis refusing writes is not the host's fault", n, msg)
		}
	}
}

// TestLoop_AckWaitsOutRedisRestart: probes that finish while Redis is down
// ack once it is back, instead of giving up and leaving their hosts to be
// probed again when the leases expire. The acks are held until Redis is
// down, so that each meets the outage: an ack Redis ran just before it
// stopped, whose reply was lost, would find its lease gone when tried
// again, which is not what is tested here.
func TestLoop_AckWaitsOutRedisRestart(t *testing.T) {
	t.Parallel()
	srv, _, q := startRestartableRedis(t)
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	const hosts = 20
	f := newLoopFixtureOn(t, q, crawltest.Options{Hosts: hosts, Seed: 26, HTTPLatency: 400 * time.Millisecond}, hosts, &lockedSink{s: s}, 10*time.Second)
	f.l.cfg.Concurrency = hosts
	f.l.cfg.LeaseTTL = 30 * time.Second // past the test: an ack given up on would stall it
	acks := watchLoop(f).holdAcks(t)

	runThroughOutage(t, f, srv, func() bool { return f.stats(t).Processing >= hosts/2 }, "acks failing", func() bool {
		acks.open() // Redis is down now
		return strings.Contains(f.logs.String(), `"msg":"ack_retry"`) || strings.Contains(f.logs.String(), `"msg":"ack_error"`)
	}, func() { time.Sleep(time.Second) }) // more probes finish and wait too (the checks hold without it)
	if n := f.l.done.Load(); n != hosts {
		t.Errorf("done = %d, want %d", n, hosts)
	}
	for _, msg := range []string{"ack_error", "lease_lost", "lease_reclaimed"} {
		if n := strings.Count(f.logs.String(), `"msg":"`+msg+`"`); n > 0 {
			t.Errorf("%d %s lines, want 0: the acks were to wait Redis out\n%s", n, msg, f.logs)
		}
	}
	if st := f.stats(t); st.Pending != 0 || st.Processing != 0 || st.Dead != 0 {
		t.Errorf("stats = %+v, want every host acked", st)
	}
}

// runThroughOutage runs f's loop over the Redis srv and stops the server
// once started holds; once down holds too (what it waits for), it calls
// during, if not nil, and then restarts the server. It fails the test
// unless the run ends without error within 30s of that, and returns when
// the server came back.
func runThroughOutage(t *testing.T, f *loopFixture, srv *redistest.Server, started func() bool, what string, down func() bool, during func()) time.Time {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f.l.Run(t.Context()) }()
	waitFor(t, 20*time.Second, "the run under way", started)
	srv.Stop()
	waitFor(t, 20*time.Second, what, down)
	if during != nil {
		during()
	}
	srv.Restart(t)
	back := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Loop.Run: %v\n%s", err, f.logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Loop.Run did not finish within 30s of Redis coming back\n%s", f.logs)
	}
	return back
}

// silenceRedis sets quietRedis as go-redis's logger once.
var silenceRedis sync.Once

// quietRedis drops go-redis's own log lines (one per failed dial while the
// server is down).
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// startRedisQueue starts a redis-server of the test's own with args and
// opens the queue on it.
func startRedisQueue(t *testing.T, args ...string) (*redistest.Server, *redis.Client, *redisstore.Store) {
	t.Helper()
	return startRedisQueueWith(t, redisstore.Options{}, args...)
}

// startRedisQueueWith is startRedisQueue opening the queue with o.
func startRedisQueueWith(t *testing.T, o redisstore.Options, args ...string) (*redistest.Server, *redis.Client, *redisstore.Store) {
	t.Helper()
	srv := redistest.Start(t, args...)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	q, err := redisstore.Open(t.Context(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return srv, c, q
}

// startRestartableRedis is startRedisQueue on a server that keeps every
// write on disk (appendfsync always), so a test may stop and restart it
// mid-crawl without losing the queue; go-redis's own log of the lost
// connections is silenced, as redisstore.Connect does.
func startRestartableRedis(t *testing.T) (*redistest.Server, *redis.Client, *redisstore.Store) {
	t.Helper()
	return startRestartableRedisWith(t, redisstore.Options{})
}

// startRestartableRedisWith is startRestartableRedis opening the queue
// with o.
func startRestartableRedisWith(t *testing.T, o redisstore.Options) (*redistest.Server, *redis.Client, *redisstore.Store) {
	t.Helper()
	silenceRedis.Do(func() { redis.SetLogger(quietRedis{}) })
	return startRedisQueueWith(t, o, "--appendonly", "yes", "--appendfsync", "always")
}

// skewClock is a clock for the queue's lease deadlines that runs with the
// wall clock plus an offset a test moves forward: the way to let every
// lease expire at a moment the test chooses, however slowly a loaded
// machine runs the rest. It is safe for concurrent use.
type skewClock struct{ off atomic.Int64 }

func (c *skewClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// Advance moves the clock forward by d.
func (c *skewClock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// fillRedis makes the Redis of c refuse writes as a full one does: under
// noeviction, with maxmemory below what it uses.
func fillRedis(t *testing.T, c *redis.Client) {
	t.Helper()
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "100kb"}} {
		if err := c.ConfigSet(context.Background(), kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond every 50ms until it holds, failing the test after d.
func waitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLoop_StateLossNoticedWithinSeconds: when Redis comes back empty (here
// FLUSHALL), the loop notices within a few seconds, not at the next
// reclaim, logs queue_state_lost and reports StateLost for /healthz.
func TestLoop_StateLossNoticedWithinSeconds(t *testing.T) {
	t.Parallel()
	_, c, q := startRedisQueue(t)
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	f := newLoopFixtureOn(t, q, crawltest.Options{Hosts: 20, Seed: 31}, 10, &lockedSink{s: s}, 5*time.Second)
	f.l.cfg.ExitWhenEmpty = false
	f.l.cfg.ReclaimEvery = time.Hour // the state check must not wait for it
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitUntil(t, 30*time.Second, "every seed done and the seen set checked", func() bool {
		return f.l.Done() == 10 && f.l.seenMax.Load() == 10
	})
	if f.l.StateLost() {
		t.Fatal("StateLost before anything was lost")
	}
	if err := c.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	lost := time.Now()
	waitUntil(t, 3*time.Second, "StateLost after FLUSHALL", f.l.StateLost)
	t.Logf("state loss noticed after %v", time.Since(lost).Round(time.Millisecond))
	if !strings.Contains(f.logs.String(), `"msg":"queue_state_lost"`) {
		t.Errorf("no queue_state_lost line:\n%s", f.logs)
	}
}

// waitUntil polls cond every 20ms until it holds or limit passes.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
