package boltstore_test

import (
	"testing"

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
