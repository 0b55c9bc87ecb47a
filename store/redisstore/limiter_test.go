package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/limiter"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// MustLimiterClient returns a client of the redis-server at addr, closed at
// the test's end.
func MustLimiterClient(tb testing.TB, addr string) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	tb.Cleanup(func() { c.Close() })
	return c
}

func TestLimiter_Allow_BurstAcrossProbes(t *testing.T) {
	addr, base := redistest.Addr(t), redistest.Prefix(t)
	var ls []*redisstore.Limiter
	for range 4 {
		l := redisstore.NewLimiter(MustLimiterClient(t, addr), base, 0.001, 3, nil, nil)
		t.Cleanup(func() { l.Close() })
		ls = append(ls, l)
	}
	allowed := 0
	for i := range 20 {
		if ls[i%4].Allow("shared.example") {
			allowed++
		}
	}
	if allowed != 3 {
		t.Errorf("4 probes allowed %d requests at 0.001/s with burst 3, want 3", allowed)
	}
	// Another key has its own bucket.
	if !ls[0].Allow("other.example") {
		t.Error(`Allow("other.example") = false, want true`)
	}
	st := ls[1].Stats()
	if st.Denials != 4 { // calls 1, 5, 9, 13, 17: only call 1 was in the burst
		t.Errorf("probe 1: Stats().Denials = %d, want 4", st.Denials)
	}
	// The key lives under the base and expires once idle.
	c := MustLimiterClient(t, addr)
	ttl, err := c.PTTL(context.Background(), base+":rl:shared.example").Result()
	if err != nil || ttl <= 0 {
		t.Errorf("PTTL of the limiter key = %v, %v; want a positive TTL", ttl, err)
	}
}

func TestLimiter_SetRate(t *testing.T) {
	addr, base := redistest.Addr(t), redistest.Prefix(t)
	l := redisstore.NewLimiter(MustLimiterClient(t, addr), base, 0.001, 1, nil, nil)
	defer l.Close()
	if !l.Allow("a") || l.Allow("a") {
		t.Fatal("want the burst of 1 then a denial")
	}
	// The busy key follows the new rate from its next request: its debt
	// of one request is now 500ms instead of 1000s, even if that request
	// must wait. The rate is slow enough that the denial below holds on a
	// loaded machine (up to 500ms between two calls), fast enough to wait
	// out.
	l.SetRate(2, 2)
	_ = l.Allow("a")
	time.Sleep(1100 * time.Millisecond) // the debt and that request paid; the script reads Redis's clock
	for i := range 2 {
		if !l.Allow("a") {
			t.Fatalf("Allow #%d after SetRate(2, 2) = false, want true", i)
		}
	}
	if l.Allow("a") {
		t.Error("Allow beyond the new burst = true, want false")
	}
	// No limit: Redis is not asked.
	l.SetRate(0, 1)
	for i := range 10 {
		if !l.Allow("a") {
			t.Fatalf("Allow #%d with no limit = false, want true", i)
		}
	}
}

func TestLimiter_Wait_Cancel(t *testing.T) {
	addr, base := redistest.Addr(t), redistest.Prefix(t)
	l := redisstore.NewLimiter(MustLimiterClient(t, addr), base, 0.001, 1, nil, nil)
	if err := l.Wait(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	if err := l.Wait(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Wait returned %v after cancel, want promptly", d)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := l.Wait(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait needing 1000s with a 1m deadline = %v, want context.DeadlineExceeded", err)
	}
	// Close wakes waiters.
	errc := make(chan error, 1)
	go func() { errc <- l.Wait(context.Background(), "a") }()
	time.Sleep(20 * time.Millisecond)
	l.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, limiter.ErrClosed) {
			t.Errorf("Wait during Close = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after Close")
	}
}

// TestLimiter_FleetHoldsRate runs 4 probes, each with its own client and
// goroutines, waiting on one key; together they must get the key's rate.
// At 20/s a slot lasts 50 ms and the burst covers 250 ms, so waiters woken
// late on a loaded machine still take every slot; at 100/s, under -race at
// load 18, the fleet got 24% fewer than the rate (its 32 waiters polling
// Redis for each 10 ms slot were themselves the load).
func TestLimiter_FleetHoldsRate(t *testing.T) {
	const (
		perSecond = 20.0
		burst     = 5
		probes    = 4
		workers   = 8
		run       = 5 * time.Second
	)
	addr, base := redistest.Addr(t), redistest.Prefix(t)
	before := runtime.NumGoroutine()
	ls := make([]*redisstore.Limiter, probes)
	clients := make([]*redis.Client, probes)
	for i := range ls {
		clients[i] = redis.NewClient(&redis.Options{Addr: addr})
		ls[i] = redisstore.NewLimiter(clients[i], base, perSecond, burst, nil, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	start := time.Now()
	end, _ := ctx.Deadline()
	var total atomic.Int64
	perProbe := make([]atomic.Int64, probes)
	var wg sync.WaitGroup
	for i, l := range ls {
		for range workers {
			wg.Go(func() {
				for l.Wait(ctx, "shared.example") == nil {
					if time.Now().Before(end) {
						total.Add(1)
						perProbe[i].Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := end.Sub(start)
	want := burst + perSecond*elapsed.Seconds()
	got := float64(total.Load())
	t.Logf("%d probes × %d workers: %.0f requests in %v, want %.0f (%.1f%% off)", probes, workers, got, elapsed, want, 100*(got-want)/want)
	if got > want*1.1 || got < want*0.9 {
		t.Errorf("fleet sent %.0f requests in %v at %v/s burst %d, want %.0f ± 10%%", got, elapsed, perSecond, burst, want)
	}
	for i := range perProbe {
		if perProbe[i].Load() == 0 {
			t.Errorf("probe %d got no request through", i)
		}
	}
	for i := range ls {
		ls[i].Close()
		clients[i].Close()
	}
	// Neither the limiters nor the closed clients leave goroutines behind.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines before, %d after Close", before, after)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger shared by goroutines.
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

// pipelineCounter counts the pipelines a client sends.
type pipelineCounter struct{ n atomic.Int64 }

func (h *pipelineCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestLimiter_FallbackAndRecovery stops a dedicated redis-server under a
// limiter and starts it again.
func TestLimiter_FallbackAndRecovery(t *testing.T) {
	srv := redistest.Start(t)
	base := redistest.Prefix(t)
	c := MustLimiterClient(t, srv.Addr)
	var pipes pipelineCounter
	c.AddHook(&pipes)
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	l := redisstore.NewLimiter(c, base, 0.001, 2, nil, logger)
	defer l.Close()
	ctx := context.Background()

	inRedis := func(key string) bool {
		n, err := c.Exists(ctx, base+":rl:"+key).Result()
		return err == nil && n == 1
	}
	if !l.Allow("a") || !inRedis("a") {
		t.Fatal(`Allow("a") with Redis up: want true, decided in Redis`)
	}

	srv.Stop()
	stopped := time.Now()
	// The fallback decides: a fresh local bucket for "a" (burst 2).
	got := []bool{l.Allow("a")}
	failedAt, asked := time.Now(), pipes.n.Load()
	t.Logf("first decision after the stop took %v", failedAt.Sub(stopped))
	got = append(got, l.Allow("a"), l.Allow("a"))
	if fmt.Sprint(got) != "[true true false]" {
		t.Errorf("Allow(a) ×3 on the fallback = %v, want [true true false]", got)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 50 {
				l.Allow(fmt.Sprintf("k%d-%d", i, j))
			}
		})
	}
	wg.Wait()
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	if err := l.Wait(wctx, "fresh"); err != nil {
		t.Errorf(`Wait("fresh") on the fallback = %v, want nil`, err)
	}
	cancel()
	// Until a second has passed, nothing tries Redis again.
	if n := pipes.n.Load(); n != asked && time.Since(failedAt) < 900*time.Millisecond {
		t.Errorf("%d pipelines sent to Redis within a second of its failure, want none", n-asked)
	}
	if n := strings.Count(logs.String(), "falling back"); n != 1 {
		t.Errorf("%d \"falling back\" log lines, want 1:\n%s", n, logs.String())
	}
	if st := l.Stats(); st.Keys == 0 {
		t.Errorf("Stats().Keys = 0 while falling back, want the fallback's keys")
	}

	srv.Restart(t)
	restarted := time.Now()
	// Soon after its return, decisions go to Redis again.
	back := false
	for i := 0; i < 50 && !back; i++ {
		time.Sleep(100 * time.Millisecond)
		key := fmt.Sprintf("after%d", i)
		l.Allow(key)
		back = inRedis(key)
	}
	if !back {
		t.Fatalf("limiter did not return to Redis within 5s of its restart:\n%s", logs.String())
	}
	t.Logf("back on Redis %v after its restart", time.Since(restarted))
	out := logs.String()
	if strings.Count(out, "falling back") != 1 || strings.Count(out, "back on redis") != 1 {
		t.Errorf("want one \"falling back\" line and one \"back on redis\" line, got:\n%s", out)
	}
}

// BenchmarkLimiter_Allow measures decisions per second from 256 goroutines
// over 10,000 keys against the shared redis-server.
func BenchmarkLimiter_Allow(b *testing.B) {
	c := MustLimiterClient(b, redistest.Addr(b))
	l := redisstore.NewLimiter(c, redistest.Prefix(b), 1, 3, nil, slog.New(slog.DiscardHandler))
	defer l.Close()
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("host%d.example.com", i)
	}
	b.SetParallelism((256 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(len(keys))
		for pb.Next() {
			l.Allow(keys[i])
			if i++; i == len(keys) {
				i = 0
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	if st := l.Stats(); st.Keys > 0 {
		b.Fatal("the limiter fell back to the local one: the figure is not Redis's")
	}
}
