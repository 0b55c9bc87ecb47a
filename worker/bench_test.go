package worker

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/metrics"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// BenchmarkRunLoop measures the queue as spyder run drives it: the
// shipped run loop with 256 slots over probes that answer at once and an
// output that takes every result, so that what is timed is the loop and
// the queue: one goroutine leasing for every free slot, a goroutine per
// item, one acker acking all that are waiting in one AckAll call,
// heartbeats and the reclaim check. Every iteration seeds 100,000 hosts
// (not timed). It reports items/s and fails if an item is not acked
// exactly once. The queue's own lease and ack benchmarks are the stores'
// (BenchmarkLeaseAck in store/boltstore and store/redisstore).
//
//	go test -run '^$' -bench RunLoop -benchtime 1x ./worker/
func BenchmarkRunLoop(b *testing.B) {
	const workers, items = 256, 100_000
	b.Run("bbolt", func(b *testing.B) {
		q, err := boltstore.Open(filepath.Join(b.TempDir(), "spyder.db"), boltstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { q.Close() })
		benchRunLoop(b, q, workers, items)
	})
	b.Run("redis", func(b *testing.B) {
		srv := redistest.Start(b)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		b.Cleanup(func() { c.Close() })
		q, err := redisstore.Open(b.Context(), c, redisstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { q.Close() })
		benchRunLoop(b, q, workers, items)
	})
	b.Run("cluster3", func(b *testing.B) {
		cl := redistest.StartCluster(b, 3, 0)
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
		b.Cleanup(func() { cc.Close() })
		q, err := redisstore.OpenSharded(b.Context(), cc, "spyder:queue", 64, redisstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { q.Close() })
		benchRunLoop(b, q, workers, items)
	})
}

func benchRunLoop(b *testing.B, q queue.Queue, workers, items int) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	cfg := Config{
		Concurrency: workers, LeaseTTL: queue.DefaultLeaseTTL, MaxAttempts: queue.DefaultMaxAttempts,
		Grace: time.Minute, ExitWhenEmpty: true, ReclaimEvery: 30 * time.Second,
	}
	var elapsed time.Duration
	for b.Loop() {
		seedUntimed(b, q, items)
		loop := New(q, instantVisitor{}, discardOutput{}, log, metrics.New(nil), cfg)
		start := time.Now()
		if err := loop.Run(ctx); err != nil {
			b.Fatalf("Run() error: %v", err)
		}
		elapsed += time.Since(start)
		if got := loop.Done(); got != int64(items) {
			b.Fatalf("acked %d items, want %d", got, items)
		}
		st, err := q.Stats(ctx)
		if err != nil || st.Pending != 0 || st.Processing != 0 || st.Dead != 0 {
			b.Fatalf("after the run: %+v, %v; want nothing pending, processing or dead", st, err)
		}
	}
	b.ReportMetric(float64(items*b.N)/elapsed.Seconds(), "items/s")
}

// instantVisitor answers every host at once with an empty result.
type instantVisitor struct{}

func (instantVisitor) Visit(_ context.Context, h host.Name) *spyder.Result {
	return &spyder.Result{Host: h}
}

// discardOutput takes every result as durable at once.
type discardOutput struct{}

func (discardOutput) Add(context.Context, *spyder.Result) error { return nil }

// benchRun makes host names unique across iterations, so that a queue can
// be reused without its seen set turning hosts into duplicates.
var benchRun atomic.Int64

// seedUntimed seeds items new hosts with the benchmark timer stopped.
func seedUntimed(b *testing.B, q queue.Queue, items int) {
	b.StopTimer()
	defer b.StartTimer()
	run := benchRun.Add(1)
	hosts := make([]host.Name, items)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("h%d-%d.bench-example", run, i)) // each its own site
	}
	if res, err := q.Seed(context.Background(), hosts); err != nil || res.Added != items {
		b.Fatalf("Seed() = %+v, %v; want %d added", res, err, items)
	}
}
