package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/internal/clocktest"
	"github.com/spyder-crawler/spyder/limiter"
	"github.com/spyder-crawler/spyder/metrics"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/boltstore"
)

// loopFixture is a worker loop over a queue (bbolt unless told) and a
// simulated world, all in-process.
type loopFixture struct {
	w       *crawltest.World
	q       queue.Queue
	l       *Loop
	batcher *sink.Batcher
	logs    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newLoopFixture(tb testing.TB, o crawltest.Options, seeds int, out sink.Sink, hostTimeout time.Duration) *loopFixture {
	tb.Helper()
	q, err := boltstore.Open(filepath.Join(tb.TempDir(), "spyder.db"), boltstore.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { q.Close() })
	return newLoopFixtureOn(tb, q, o, seeds, out, hostTimeout)
}

func newLoopFixtureOn(tb testing.TB, q queue.Queue, o crawltest.Options, seeds int, out sink.Sink, hostTimeout time.Duration) *loopFixture {
	tb.Helper()
	return newLoopFixtureWith(tb, q, &store.MemoryEmitted{}, o, seeds, out, hostTimeout)
}

// newLoopFixtureWith is newLoopFixtureOn with the output's seen sets in
// emitted.
func newLoopFixtureWith(tb testing.TB, q queue.Queue, emitted store.Emitted, o crawltest.Options, seeds int, out sink.Sink, hostTimeout time.Duration) *loopFixture {
	tb.Helper()
	w := crawltest.Start(tb, o)
	hosts := make([]host.Name, seeds)
	for i, s := range w.Seeds[:seeds] {
		h, err := host.Parse(s)
		if err != nil {
			tb.Fatalf("seed %q: %v", s, err)
		}
		hosts[i] = h
	}
	if _, err := q.Seed(tb.Context(), hosts); err != nil {
		tb.Fatal(err)
	}
	lim := limiter.New(limiter.DefaultPerSecond, limiter.DefaultBurst)
	tb.Cleanup(func() { lim.Close() })
	c, err := crawl.New(crawl.Config{Resolver: w.Resolver, RootCAs: w.RootCAs, Dial: w.Dial, Limiter: lim, HostTimeout: hostTimeout})
	if err != nil {
		tb.Fatal(err)
	}
	b := sink.NewBatcher(out, emitted, sink.BatcherConfig{MaxDelay: 20 * time.Millisecond})
	tb.Cleanup(func() { b.Close(context.Background()) })
	logs := &syncBuffer{}
	l := New(q, c, b, slog.New(slog.NewJSONHandler(logs, nil)), metrics.New(lim), Config{
		Concurrency: 16, LeaseTTL: time.Minute, MaxAttempts: 3, Grace: time.Minute,
		ExitWhenEmpty: true, ReclaimEvery: time.Second, MaxDomains: 1 << 40, Check: c.Resolver().Check,
	})
	return &loopFixture{w: w, q: q, batcher: b, logs: logs, l: l}
}

func (f *loopFixture) run(tb testing.TB, ctx context.Context) {
	tb.Helper()
	done := make(chan error, 1)
	go func() { done <- f.l.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			tb.Fatalf("Loop.Run: %v\n%s", err, f.logs)
		}
	case <-time.After(60 * time.Second):
		tb.Fatalf("Loop.Run did not return within 60s\n%s", f.logs)
	}
}

func (f *loopFixture) stats(tb testing.TB) queue.Stats {
	tb.Helper()
	st, err := f.q.Stats(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// logLines returns the JSON log lines of logs whose msg is msg.
func logLines(logs, msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// brokenSink is a real file sink whose file was closed: every write fails.
func brokenSink(tb testing.TB) sink.Sink {
	f, err := os.Create(filepath.Join(tb.TempDir(), "out.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	f.Close()
	s, err := sink.NewJSONSink(f, sink.FormatBatch)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestLoop_SinkFailureGoesThroughFail checks that an output that cannot be
// written is an internal error: the host is failed, retried, and dead after
// max attempts with the reason, never acked as done.
func TestLoop_SinkFailureGoesThroughFail(t *testing.T) {
	t.Parallel()
	f := newLoopFixture(t, crawltest.Options{Hosts: 20, Seed: 21}, 10, brokenSink(t), 5*time.Second)
	f.l.cfg.MaxAttempts = 2
	f.run(t, t.Context())
	st := f.stats(t)
	if st.Dead != 10 || st.Pending != 0 || st.Processing != 0 {
		t.Fatalf("stats = %+v, want all 10 hosts dead", st)
	}
	dead, err := f.q.Dead(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		if !strings.Contains(d.Error, "output:") || d.Item == nil || d.Item.Attempt != 2 {
			t.Errorf("dead item %s, attempt %v: error %q, want an output error after 2 attempts", d.Raw, d.Item, d.Error)
		}
	}
	if n := f.l.done.Load(); n != 0 {
		t.Errorf("done = %d, want 0: nothing was written", n)
	}
	if n := strings.Count(f.logs.String(), `"msg":"item_dead"`); n != 10 {
		t.Errorf("%d item_dead lines, want 10", n)
	}
}

// ackRecorder is a queue that records how it is acked.
type ackRecorder struct {
	queue.Queue
	mu      sync.Mutex
	batches []int    // the size of each AckAll call
	bare    []string // hosts acked without their probe in the same call
}

func (r *ackRecorder) AckAll(ctx context.Context, ls []queue.Lease, ps []queue.Visit) ([]bool, error) {
	r.mu.Lock()
	r.batches = append(r.batches, len(ls))
	probed := map[host.Name]bool{}
	for _, p := range ps {
		probed[p.Host] = true
	}
	for _, l := range ls {
		if !probed[l.Item.Host] {
			r.bare = append(r.bare, string(l.Item.Host))
		}
	}
	r.mu.Unlock()
	return r.Queue.AckAll(ctx, ls, ps)
}

// TestLoop_AcksInBatches: hosts whose output was written together are acked
// together, in one AckAll call, not with a call each, and each host's probe
// goes in the call that acks it.
func TestLoop_AcksInBatches(t *testing.T) {
	t.Parallel()
	q, err := boltstore.Open(filepath.Join(t.TempDir(), "spyder.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	rec := &ackRecorder{Queue: q}
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	const hosts = 40
	f := newLoopFixtureOn(t, rec, crawltest.Options{Hosts: hosts, Seed: 27}, hosts, &lockedSink{s: s}, 5*time.Second)
	f.l.cfg.Concurrency = hosts
	f.run(t, t.Context())
	if n := f.l.done.Load(); n != hosts {
		t.Fatalf("done = %d, want %d\n%s", n, hosts, f.logs)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	sum, most := 0, 0
	for _, n := range rec.batches {
		sum, most = sum+n, max(most, n)
	}
	if sum != hosts || most < 2 {
		t.Errorf("acked by AckAll calls of %v; want every host in AckAll calls, some together", rec.batches)
	}
	if len(rec.bare) > 0 {
		t.Errorf("hosts acked without their probe in the same AckAll call: %v", rec.bare)
	}
}

// TestLoop_ShutdownReleasesInOneStep cancels the loop while every probe
// hangs: after the grace period the leases go back to pending unchanged
// (attempt not counted), and one shutdown_cleanup line names them.
func TestLoop_ShutdownReleasesInOneStep(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	f := newLoopFixture(t, crawltest.Options{Hosts: 40, Seed: 22, SlowFraction: 1}, 40, &lockedSink{s: s}, 30*time.Second)
	f.l.cfg.Grace = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for f.l.Inflight() < 16 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	f.run(t, ctx)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("shutdown took %v with a 300ms grace", d)
	}
	st := f.stats(t)
	if st.Processing != 0 || st.Pending+int64(f.l.done.Load()) != 40 {
		t.Errorf("stats after shutdown = %+v (done %d), want every unfinished host pending", st, f.l.done.Load())
	}
	lines := logLines(f.logs.String(), "shutdown_cleanup")
	if len(lines) != 1 {
		t.Fatalf("%d shutdown_cleanup lines, want 1:\n%s", len(lines), f.logs)
	}
	if n, _ := lines[0]["returned"].(float64); n < 1 {
		t.Errorf("shutdown_cleanup = %v, want hosts returned", lines[0])
	}
	var attempts []int
	queue.Export(t.Context(), f.q, &writerFunc{func(p []byte) {
		if strings.Contains(string(p), `"attempt":1`) {
			attempts = append(attempts, 1)
		}
	}})
	if len(attempts) > 0 {
		t.Errorf("%d released items had their attempt counted", len(attempts))
	}
}

// TestLoop_HeartbeatKeepsLongProbes: probes of hanging hosts outlive
// their leases' TTL many times over; heartbeats extend the leases, so no
// lease is lost or reclaimed and every host is acked once.
//
// The queue's clock moves only by hand, half a TTL at a time, and only
// once every lease in flight was leased or extended since the last move:
// so a lease expires only if its heartbeat stops, however late a loaded
// machine runs it, and a probe in flight over several moves shows the
// heartbeats kept its lease past its TTL.
func TestLoop_HeartbeatKeepsLongProbes(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Now().Round(0)) // no monotonic reading: the store follows its wall time
	q, err := boltstore.Open(filepath.Join(t.TempDir(), "spyder.db"), boltstore.Options{NoSync: true, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	f := newLoopFixtureOn(t, q, crawltest.Options{Hosts: 12, Seed: 23, SlowFraction: 0.5}, 12, &lockedSink{s: s}, 4*time.Second)
	const ttl = 300 * time.Millisecond // heartbeats every 100 ms of real time
	f.l.cfg.LeaseTTL = ttl
	f.l.cfg.ReclaimEvery = 100 * time.Millisecond
	watch := watchLoop(f)
	done := make(chan error, 1)
	go func() { done <- f.l.Run(t.Context()) }()
	spans := map[string]int{} // by lease ID: the moves of the clock it was in flight over
	for limit := time.After(60 * time.Second); ; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Loop.Run: %v\n%s", err, f.logs)
			}
		case <-limit:
			t.Fatalf("Loop.Run did not return within 60s\n%s", f.logs)
		case <-time.After(10 * time.Millisecond):
			if ids := f.inflightIDs(); len(ids) > 0 && watch.allFresh(ids) {
				clock.Add(ttl / 2)
				watch.nextEpoch()
				for _, id := range ids {
					spans[id]++
				}
			}
			continue
		}
		break
	}
	if n := f.l.done.Load(); n != 12 {
		t.Errorf("done = %d, want 12\n%s", n, f.logs)
	}
	for _, msg := range []string{"lease_lost", "lease_reclaimed"} {
		if n := len(logLines(f.logs.String(), msg)); n > 0 {
			t.Errorf("%d %s lines: heartbeats did not hold the leases", n, msg)
		}
	}
	most := 0
	for _, n := range spans {
		most = max(most, n)
	}
	if most < 4 {
		t.Errorf("no lease was in flight over more than %d moves of half a TTL, want 4: no lease was kept past its TTL", most)
	}
}

// inflightIDs returns the IDs of the leases f's loop holds.
func (f *loopFixture) inflightIDs() []string {
	f.l.mu.Lock()
	defer f.l.mu.Unlock()
	return slices.Collect(maps.Keys(f.l.inflight))
}

// TestLoop_ContinuousStopsAtMaxDomains crawls discovered hosts too, and
// stops enqueueing at the bound.
func TestLoop_ContinuousStopsAtMaxDomains(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	f := newLoopFixture(t, crawltest.Options{Hosts: 60, Seed: 24}, 10, &lockedSink{s: s}, 5*time.Second)
	f.l.cfg.Continuous, f.l.cfg.MaxDomains = true, 25
	f.l.seen.Store(10)
	f.run(t, t.Context())
	st := f.stats(t)
	if st.Seen != 25 {
		t.Errorf("seen = %d, want 25 (10 seeds plus discovered hosts up to --max-domains)", st.Seen)
	}
	if n := f.l.done.Load(); n != st.Seen {
		t.Errorf("done = %d, want every seen host (%d) probed", n, st.Seen)
	}
}

type lockedSink struct {
	mu sync.Mutex
	s  sink.Sink
}

func (l *lockedSink) WriteBatch(ctx context.Context, b *spyder.Batch) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.WriteBatch(ctx, b)
}

type writerFunc struct{ f func([]byte) }

func (w *writerFunc) Write(p []byte) (int, error) { w.f(p); return len(p), nil }

// TestLoop_RefusedWriteNamesItsHosts: when one output takes a batch and
// the next refuses it (a full disk: /dev/full answers ENOSPC), the run
// halts and hands the hosts back, though the first output holds their
// result. Each such host is named in a write_refused line, so that its
// second write (by the probe that gets it next) is accounted for.
func TestLoop_RefusedWriteNamesItsHosts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	out, closeOut, err := sink.OpenFile(path, sink.FormatBatch, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer closeOut()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	refusing, err := sink.NewJSONSink(full, sink.FormatBatch)
	if err != nil {
		t.Fatal(err)
	}
	f := newLoopFixture(t, crawltest.Options{Hosts: 20, Seed: 21}, 10, sink.Tee{out, refusing}, 5*time.Second)
	if err := f.l.Run(t.Context()); !errors.Is(err, store.ErrWritesRefused) {
		t.Fatalf("Loop.Run = %v, want the refused write\n%s", err, f.logs)
	}
	named := map[string]bool{}
	for _, l := range logLines(f.logs.String(), "write_refused") {
		named[l["host"].(string)] = true
	}
	written := mustHostsIn(t, path)
	if len(written) == 0 {
		t.Fatalf("the first output holds no host; logs:\n%s", f.logs)
	}
	for _, h := range written {
		if !named[h] {
			t.Errorf("%s is in the first output and was handed back, with no write_refused line naming it", h)
		}
	}
	if st := f.stats(t); st.Pending != 10 || st.Processing != 0 || f.l.done.Load() != 0 {
		t.Errorf("stats = %+v, done %d: want every host handed back, none acked", st, f.l.done.Load())
	}
}

// mustHostsIn returns the probed hosts of the batches in the file at path,
// failing the test if one is there twice (see probedOnce).
func mustHostsIn(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var hs []string
	for h := range probedOnce(t, string(data)) {
		hs = append(hs, h)
	}
	return hs
}
