package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
	"github.com/spyder-crawler/spyder/store/storetest"
)

// BenchmarkLeaseAck: 256 workers lease and ack until 100,000 items are
// done, each sub-benchmark on its own fresh redis-server:
//
//   - redisstore: this backend, each worker leasing one item at a time and
//     acking it (storetest.BenchLeaseAck, which the bbolt backend runs too):
//     every item costs its worker two waits for a shared script call;
//   - redisstore/batch=64: each worker leasing up to 64 items per call and
//     acking them in one AckAll call;
//   - (this backend under spyder run's own loop is worker's
//     BenchmarkRunLoop);
//   - original: the older spyder's list protocol as the baseline,
//     BRPOPLPUSH then LREM on {base}:processing, one item per round trip,
//     with the go-redis default pool as it had, and again with a pool of
//     256.
//
// Besides items/s it reports server-µs/item and client-µs/item, the CPU
// time per item of the redis-server and of this process, both including the
// untimed seeding (see reportCPU and BenchmarkSeed).
//
//	go test -run '^$' -bench LeaseAck -benchtime 1x ./store/redisstore/
func BenchmarkLeaseAck(b *testing.B) {
	const workers, items = 256, 100_000
	for _, batch := range []int{1, 64} {
		name := "redisstore"
		if batch > 1 {
			name = fmt.Sprintf("redisstore/batch=%d", batch)
		}
		b.Run(name, func(b *testing.B) {
			srv := redistest.Start(b)
			s := MustOpenAt(b, srv.Addr, "spyder:queue", nil)
			defer reportCPU(b, s.Client(), items)()
			storetest.BenchLeaseAck(b, s, workers, batch, items)
		})
	}
	for _, batch := range []int{1, 64} {
		name := "cluster3"
		if batch > 1 {
			name = fmt.Sprintf("cluster3/batch=%d", batch)
		}
		b.Run(name, func(b *testing.B) {
			s := mustBenchCluster(b)
			defer reportCPU(b, s.Client(), items)()
			storetest.BenchLeaseAck(b, s, workers, batch, items)
		})
	}
	b.Run("original", func(b *testing.B) {
		srv := redistest.Start(b)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		defer reportCPU(b, c, items)()
		benchOriginal(b, c, workers, items)
	})
	b.Run("original/pool=256", func(b *testing.B) {
		srv := redistest.Start(b)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: workers})
		defer reportCPU(b, c, items)()
		benchOriginal(b, c, workers, items)
	})
}

// benchOriginal runs the original protocol's worker loop: BRPOPLPUSH from
// the pending list to the processing list, then LREM of the same bytes.
func benchOriginal(b *testing.B, c *redis.Client, workers, items int) {
	ctx := context.Background()
	b.Cleanup(func() { c.Close() })
	const key, proc = "spyder:queue", "spyder:queue:processing"
	var elapsed time.Duration
	run := 0
	for b.Loop() {
		b.StopTimer()
		run++
		pipe := c.Pipeline()
		for i := range items {
			pipe.LPush(ctx, key, fmt.Sprintf(`{"host":"h%d-%d.bench.example","ts":1705312200,"attempt":0}`, run, i))
			if pipe.Len() == 1000 {
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		var (
			taken, acked atomic.Int64
			wg           sync.WaitGroup
		)
		for range workers {
			wg.Go(func() {
				for taken.Load() < int64(items) {
					// The original blocks 5s; 10ms keeps the run's tail short.
					raw, err := c.Do(ctx, "BRPOPLPUSH", key, proc, "0.01").Text()
					if err == redis.Nil {
						continue
					}
					if err != nil {
						b.Errorf("BRPOPLPUSH: %v", err)
						return
					}
					taken.Add(1)
					if err := c.LRem(ctx, proc, 1, raw).Err(); err != nil {
						b.Errorf("LREM: %v", err)
						return
					}
					acked.Add(1)
				}
			})
		}
		wg.Wait()
		elapsed += time.Since(start)
		if got := acked.Load(); got != int64(items) {
			b.Fatalf("acked %d items, want %d", got, items)
		}
	}
	b.ReportMetric(float64(items*b.N)/elapsed.Seconds(), "items/s")
}

// BenchmarkSeed seeds 1,000,000 new hosts (dedup against the seen set) per
// iteration on a fresh redis-server.
//
//	go test -run '^$' -bench Seed -benchtime 1x ./store/redisstore/
func BenchmarkSeed(b *testing.B) {
	srv := redistest.Start(b)
	s := MustOpenAt(b, srv.Addr, "spyder:queue", nil)
	defer reportCPU(b, s.Client(), 1_000_000)()
	storetest.BenchSeed(b, s, 1_000_000)
}

// BenchmarkSeedCluster is BenchmarkSeed on a fresh 3-master Redis Cluster,
// into the default 64 shards; server-µs/item sums the CPU of every node.
//
//	go test -run '^$' -bench SeedCluster -benchtime 1x ./store/redisstore/
func BenchmarkSeedCluster(b *testing.B) {
	s := mustBenchCluster(b)
	defer reportCPU(b, s.Client(), 1_000_000)()
	storetest.BenchSeed(b, s, 1_000_000)
}

// mustBenchCluster opens the default sharded queue on a fresh 3-master
// cluster.
func mustBenchCluster(b *testing.B) *redisstore.Sharded {
	c := redistest.StartCluster(b, 3, 0)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	b.Cleanup(func() { cc.Close() })
	return MustOpenSharded(b, cc, "spyder:queue", 64)
}

// reportCPU returns a func that reports, per item since the call and
// including untimed setup, the CPU time (user+sys) of the redis-server and of
// this process, the client. On a shared machine they are steadier than
// items/s, and together they bound it: client and server share the 2 cores
// here, so items/s can never pass 2 s / (server+client µs per item). The
// server figure alone bounds what one Redis can serve a fleet.
func reportCPU(b *testing.B, c redis.UniversalClient, items int) func() {
	server, client := serverCPU(b, c), clientCPU(b)
	return func() {
		per := func(d time.Duration) float64 { return d.Seconds() * 1e6 / float64(items*b.N) }
		b.ReportMetric(per(serverCPU(b, c)-server), "server-µs/item")
		b.ReportMetric(per(clientCPU(b)-client), "client-µs/item")
	}
}

// clientCPU is this process's CPU time so far.
func clientCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the CPU time so far of the server, or of every node of a
// cluster.
func serverCPU(b *testing.B, c redis.UniversalClient) time.Duration {
	if cc, ok := c.(*redis.ClusterClient); ok {
		var total atomic.Int64
		err := cc.ForEachShard(context.Background(), func(_ context.Context, n *redis.Client) error {
			total.Add(int64(serverCPU(b, n)))
			return nil
		})
		if err != nil {
			b.Fatalf("INFO cpu on the cluster: %v", err)
		}
		return time.Duration(total.Load())
	}
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatalf("INFO cpu: %v", err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}
