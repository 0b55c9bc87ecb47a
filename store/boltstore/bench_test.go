package boltstore_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/storetest"
)

// BenchmarkLeaseAck times the queue's hot path: 256 workers leasing and acking
// 100,000 items, fsync on: each worker leasing and acking one item at a
// time (batch=1), and up to 64 at a time with one AckAll (batch=64). The
// queue as spyder run drives it is worker's BenchmarkRunLoop.
// Run: go test -run '^$' -bench LeaseAck -benchtime 1x ./store/boltstore/
func BenchmarkLeaseAck(b *testing.B) {
	for _, batch := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			storetest.BenchLeaseAck(b, MustOpen(b, boltstore.Options{}), 256, batch, 100_000)
		})
	}
}

// BenchmarkSeed seeds 1,000,000 new hosts per iteration, fsync on, with dedup
// against the seen set.
func BenchmarkSeed(b *testing.B) {
	s := MustOpen(b, boltstore.Options{})
	storetest.BenchSeed(b, s, 1_000_000)
}

// TestSeed_Million seeds 1,000,000 hosts plus 100,000 repeats into one file
// with fsync on and checks the counts: dedup at the scale users run. How
// fast is BenchmarkSeed's business (a timed test under -race, beside other
// packages, measures the machine). It runs with SPYDER_SOAK set (make soak).
func TestSeed_Million(t *testing.T) {
	if os.Getenv("SPYDER_SOAK") == "" {
		t.Skip("set SPYDER_SOAK=1 to seed a million hosts")
	}
	s := MustOpen(t, boltstore.Options{})
	hosts := make([]host.Name, 0, 1_100_000)
	for i := range 1_000_000 {
		hosts = append(hosts, host.Name(fmt.Sprintf("host-%d.example.com", i)))
	}
	hosts = append(hosts, hosts[:100_000]...)
	start := time.Now()
	res, err := s.Seed(context.Background(), hosts)
	if err != nil {
		t.Fatalf("Seed() error: %v", err)
	}
	t.Logf("seeded %d hosts (%d duplicates) in %v", res.Added, res.Duplicate, time.Since(start))
	if res.Added != 1_000_000 || res.Duplicate != 100_000 {
		t.Errorf("Seed() = %d added, %d duplicate; want 1000000, 100000", res.Added, res.Duplicate)
	}
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 1_000_000 || st.Seen != 1_000_000 {
		t.Errorf("Stats() = %+v; want 1000000 pending and seen", st)
	}
}
