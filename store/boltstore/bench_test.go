package boltstore_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"spyder/queue/queuetest"
	"spyder/store/boltstore"
)

// BenchmarkLeaseAck is the target: 256 workers leasing and acking
// 100,000 items, fsync on. Run: go test -run '^$' -bench LeaseAck -benchtime 1x ./store/boltstore/
func BenchmarkLeaseAck(b *testing.B) {
	s := MustOpen(b, boltstore.Options{})
	queuetest.BenchLeaseAck(b, s, 256, 100_000)
}

// BenchmarkSeed seeds 1,000,000 new hosts per iteration, fsync on, with dedup
// against the seen set.
func BenchmarkSeed(b *testing.B) {
	s := MustOpen(b, boltstore.Options{})
	queuetest.BenchSeed(b, s, 1_000_000)
}

// TestSeed_Million is the seeding target as a test: 1,000,000 hosts
// (plus 100,000 repeats) into a file with fsync on in under 20 s. It runs
// with SPYDER_SOAK set (make soak).
func TestSeed_Million(t *testing.T) {
	if os.Getenv("SPYDER_SOAK") == "" {
		t.Skip("set SPYDER_SOAK=1 to seed a million hosts")
	}
	s := MustOpen(t, boltstore.Options{})
	hosts := make([]string, 0, 1_100_000)
	for i := range 1_000_000 {
		hosts = append(hosts, fmt.Sprintf("host-%d.example.com", i))
	}
	hosts = append(hosts, hosts[:100_000]...)
	start := time.Now()
	res, err := s.Seed(context.Background(), hosts)
	d := time.Since(start)
	if err != nil {
		t.Fatalf("Seed() error: %v", err)
	}
	t.Logf("seeded %d hosts (%d duplicates) in %v", res.Added, res.Duplicate, d)
	if res.Added != 1_000_000 || res.Duplicate != 100_000 {
		t.Errorf("Seed() = %d added, %d duplicate; want 1000000, 100000", res.Added, res.Duplicate)
	}
	if d > 20*time.Second {
		t.Errorf("Seed() of a million hosts took %v, want under 20s", d)
	}
}
