package queuetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"spyder/queue"
)

// benchRun makes host names unique across benchmark iterations and calls, so
// a queue can be reused without its seen set turning hosts into duplicates.
var benchRun atomic.Int64

func benchHosts(n int) []string {
	run := benchRun.Add(1)
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("h%d-%d.bench.example", run, i)
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
// time and ack them until all are done: with batch 1 by Ack, one item per
// call as crawl workers did in the original; with more in one AckAll call.
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

// benchAck acks ls, one by one when it holds one lease, and returns how
// many were acked; a lease reported lost is an error.
func benchAck(ctx context.Context, q queue.Queue, ls []queue.Lease) (int, error) {
	switch len(ls) {
	case 0:
		return 0, nil
	case 1:
		if err := q.Ack(ctx, ls[0]); err != nil {
			return 0, fmt.Errorf("Ack() error: %w", err)
		}
		return 1, nil
	}
	ok, err := q.AckAll(ctx, ls)
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

// BenchRunLoop measures the queue as spyder run drives it: one goroutine
// leases as many items as there are free slots (workers slots in all), each
// item gets a goroutine of its own (where spyder run probes it), which hands
// the lease to one acker; the acker acks all that are waiting in one AckAll
// call and frees their slots, so at most workers items are leased and not
// yet acked, as in the original protocol with workers workers. Every
// iteration seeds items hosts (not timed). It reports items/s and fails if
// an item is lost or acked twice.
func BenchRunLoop(b *testing.B, q queue.Queue, workers, items int) {
	b.Helper()
	ctx := context.Background()
	var elapsed time.Duration
	for b.Loop() {
		seedUntimed(b, q, items)
		start := time.Now()
		slots := make(chan struct{}, workers)
		done := make(chan queue.Lease, workers)
		acked := make(chan int)
		go func() { acked <- benchAcker(b, q, done, slots) }()
		for taken := 0; taken < items; {
			slots <- struct{}{}
			n := 1
		more:
			for ; n < workers; n++ {
				select {
				case slots <- struct{}{}:
				default:
					break more
				}
			}
			ls, err := q.Lease(ctx, n, queue.DefaultLeaseTTL, 10*time.Millisecond)
			if err != nil {
				b.Fatalf("Lease() error: %v", err)
			}
			for range n - len(ls) {
				<-slots
			}
			taken += len(ls)
			for _, l := range ls {
				go func() { done <- l }()
			}
		}
		for range workers { // every slot free: every item acked
			slots <- struct{}{}
		}
		close(done)
		got := <-acked
		elapsed += time.Since(start)
		if got != items {
			b.Fatalf("acked %d items, want %d", got, items)
		}
	}
	b.ReportMetric(float64(items*b.N)/elapsed.Seconds(), "items/s")
}

// benchAcker acks the leases sent on done, as many per AckAll call as are
// waiting, frees a slot for each and returns how many were acked.
func benchAcker(b *testing.B, q queue.Queue, done <-chan queue.Lease, slots <-chan struct{}) int {
	acked := 0
	for l := range done {
		batch := []queue.Lease{l}
	more:
		for {
			select {
			case l, ok := <-done:
				if !ok {
					break more
				}
				batch = append(batch, l)
			default:
				break more
			}
		}
		n, err := benchAck(context.Background(), q, batch)
		if err != nil {
			b.Error(err)
		}
		acked += n
		for range batch {
			<-slots
		}
	}
	return acked
}

// seedUntimed seeds items new hosts with the benchmark timer stopped.
func seedUntimed(b *testing.B, q queue.Queue, items int) {
	b.StopTimer()
	defer b.StartTimer()
	if res, err := q.Seed(context.Background(), benchHosts(items)); err != nil || res.Added != items {
		b.Fatalf("Seed() = %+v, %v; want %d added", res, err, items)
	}
}
