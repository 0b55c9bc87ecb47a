package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/queue"
)

func testConcurrent(t *testing.T, q queue.Queue) {
	const (
		workers = 64
		items   = 10_000
	)
	hosts := make([]string, items)
	index := make(map[string]int, items)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("c%05d.com", i)
		index[hosts[i]] = i
	}
	if res := mustSeed(t, q, hosts...); res.Added != items {
		t.Fatalf("Seed() added %d, want %d", res.Added, items)
	}
	var (
		acks   [items]atomic.Int32
		leased [items]atomic.Int32
		done   atomic.Int64
		wg     sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for w := range workers {
		wg.Go(func() {
			for done.Load() < items && ctx.Err() == nil {
				ls, err := q.Lease(ctx, 1+w%4, long, 20*time.Millisecond)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("Lease() error: %v", err)
					}
					return
				}
				for _, l := range ls {
					i, ok := index[string(l.Item.Host)]
					if !ok {
						t.Errorf("leased unknown host %q", l.Item.Host)
						continue
					}
					leased[i].Add(1)
					if err := Ack(ctx, q, l); err != nil {
						t.Errorf("Ack(%s) error: %v", l.Item.Host, err)
						continue
					}
					acks[i].Add(1)
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Errorf("workers acked %d of %d items before the timeout", done.Load(), items)
	}
	bad := 0
	for i := range acks {
		if a, l := acks[i].Load(), leased[i].Load(); (a != 1 || l != 1) && bad < 10 {
			bad++
			t.Errorf("%s leased %d times, acked %d times; want 1 and 1", hosts[i], l, a)
		}
	}
	wantCounts(t, q, 0, 0, 0, items)
}

// Drain works q the way workers do, Reclaim (expired leases back, with
// ttl 1 minute and 3 attempts) then Lease and Ack until nothing is left,
// and returns how many times each host was acked. Any error fails tb.
func Drain(tb testing.TB, q queue.Queue) map[string]int {
	tb.Helper()
	ctx := context.Background()
	if _, err := q.Reclaim(ctx, time.Minute, 3); err != nil {
		tb.Fatalf("Reclaim() error: %v", err)
	}
	acked := map[string]int{}
	for i := 0; ; i++ {
		if i > 1000 {
			tb.Fatal("Lease() still returns items after 1000 rounds")
		}
		ls, err := q.Lease(ctx, 7, time.Minute, 0)
		if err != nil {
			tb.Fatalf("Lease() error: %v", err)
		}
		if len(ls) == 0 {
			return acked
		}
		for _, l := range ls {
			if err := Ack(ctx, q, l); err != nil {
				tb.Fatalf("Ack(%s) error: %v", l.Item.Host, err)
			}
			acked[string(l.Item.Host)]++
		}
	}
}
