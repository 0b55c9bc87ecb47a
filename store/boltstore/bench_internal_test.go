package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// BenchmarkLeaseAckOnePerTransaction is the baseline group commit is
// measured against: the same lease and ack steps, 256 workers, but each in
// its own transaction (own fsync), as a plain db.Update per call would do.
func BenchmarkLeaseAckOnePerTransaction(b *testing.B) {
	const workers, items = 256, 1000
	s, err := Open(filepath.Join(b.TempDir(), "spyder.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var elapsed time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		hosts := make([]host.Name, items)
		for j := range hosts {
			hosts[j] = host.Name(fmt.Sprintf("h%d-%d.bench.example", i, j))
		}
		if _, err := s.Seed(context.Background(), hosts); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		var done atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for done.Load() < items {
					var ls []queue.Lease
					if err := s.db.Update(s.leaseApply(&ls, 1, time.Minute)); err != nil {
						b.Error(err)
						return
					}
					for _, l := range ls {
						err := s.db.Update(func(tx *bbolt.Tx) error {
							ok, err := s.ackIn(tx, l)
							if err == nil && !ok {
								err = queue.ErrLeaseLost
							}
							return err
						})
						if err != nil {
							b.Error(err)
							return
						}
						done.Add(1)
					}
					if len(ls) == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(items*b.N)/elapsed.Seconds(), "items/s")
}
