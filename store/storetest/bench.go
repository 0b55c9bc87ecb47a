package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// benchRun makes host names unique across benchmark iterations and calls, so
// a queue can be reused without its seen set turning hosts into duplicates.
var benchRun atomic.Int64

func benchHosts(n int) []host.Name {
	run := benchRun.Add(1)
	hosts := make([]host.Name, n)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("h%d-%d.bench-example", run, i)) // each its own site
	}
	return hosts
}

// BenchSeed measures seeding: every iteration seeds hosts new host names in
// one Seed call (the backend chunks it), with dedup against the seen set
// that grows across iterations. It reports hosts/s.
func BenchSeed(b *testing.B, q queue.Queue, hosts int) {
	b.Helper()
	ctx := context.Background()
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		in := benchHosts(hosts)
		b.StartTimer()
		start := time.Now()
		res, err := q.Seed(ctx, in)
		elapsed += time.Since(start)
		if err != nil {
			b.Fatalf("Seed() error: %v", err)
		}
		if res.Added != hosts {
			b.Fatalf("Seed() added %d, want %d", res.Added, hosts)
		}
	}
	b.ReportMetric(float64(hosts*b.N)/elapsed.Seconds(), "hosts/s")
}

// BenchLeaseAck measures the worker loop: every iteration seeds items hosts
// (not timed), then workers goroutines each lease up to batch items at a
// time and ack them until all are done: with batch 1 one item per call (as
// the older spyder's workers did, one BRPOPLPUSH and one LREM per item);
// with more, all a worker holds in one AckAll call.
// It reports items/s (one item is one lease plus one ack) and fails if an
// item is lost or acked twice.
func BenchLeaseAck(b *testing.B, q queue.Queue, workers, batch, items int) {
	b.Helper()
	ctx := context.Background()
	var elapsed time.Duration
	for b.Loop() {
		seedUntimed(b, q, items)
		start := time.Now()
		var (
			taken, acked atomic.Int64
			wg           sync.WaitGroup
		)
		for range workers {
			wg.Go(func() {
				for taken.Load() < int64(items) {
					ls, err := q.Lease(ctx, batch, queue.DefaultLeaseTTL, 10*time.Millisecond)
					if err != nil {
						b.Errorf("Lease() error: %v", err)
						return
					}
					taken.Add(int64(len(ls)))
					n, err := benchAck(ctx, q, ls)
					acked.Add(int64(n))
					if err != nil {
						b.Error(err)
						return
					}
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

// benchAck acks ls (one by one when it holds one lease, as ack does) and
// returns how many were acked; a lease reported lost is an error.
func benchAck(ctx context.Context, q queue.Queue, ls []queue.Lease) (int, error) {
	switch len(ls) {
	case 0:
		return 0, nil
	case 1:
		if err := Ack(ctx, q, ls[0]); err != nil {
			return 0, fmt.Errorf("Ack() error: %w", err)
		}
		return 1, nil
	}
	ok, err := q.AckAll(ctx, ls, nil)
	if err != nil {
		return 0, fmt.Errorf("AckAll() error: %w", err)
	}
	n := 0
	for _, held := range ok {
		if held {
			n++
		}
	}
	if n < len(ls) {
		return n, fmt.Errorf("AckAll() reported %d of %d leases lost", len(ls)-n, len(ls))
	}
	return n, nil
}

// seedUntimed seeds items new hosts with the benchmark timer stopped.
func seedUntimed(b *testing.B, q queue.Queue, items int) {
	b.StopTimer()
	defer b.StartTimer()
	if res, err := q.Seed(context.Background(), benchHosts(items)); err != nil || res.Added != items {
		b.Fatalf("Seed() = %+v, %v; want %d added", res, err, items)
	}
}
