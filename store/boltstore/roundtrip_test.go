package boltstore_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestExport_BoltRedisBolt is the round trip between the backends: bbolt → file → Redis →
// file → bbolt gives back the same state, byte for byte in bbolt's export
// (bbolt orders processing by lease ID and seen by host; Redis keeps the
// pending and dead list orders).
func TestExport_BoltRedisBolt(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	r, err := redisstore.Open(ctx, c, redisstore.Options{Key: redistest.Prefix(t)})
	if err != nil {
		t.Fatalf("redisstore.Open() error: %v", err)
	}
	t.Cleanup(func() { r.Close() })

	b1 := MustOpen(t, boltstore.Options{NoSync: true})
	hosts := make([]host.Name, 200)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("h%03d.example", i))
	}
	b1.Seed(ctx, hosts)
	ls, _ := b1.Lease(ctx, 30, time.Hour, 0)
	for i, l := range ls {
		switch i % 3 {
		case 0:
			b1.Fail(ctx, l, fmt.Sprintf("error %d: \"quoted\"", i), 1) // dead
		case 1:
			b1.Fail(ctx, l, "retry", 3) // back to pending, attempt 1
		} // else still processing
	}

	var file1, file2, file3 bytes.Buffer
	if err := queue.Export(ctx, b1, &file1); err != nil {
		t.Fatalf("Export(bbolt) error: %v", err)
	}
	if _, err := queue.Import(ctx, r, bytes.NewReader(file1.Bytes())); err != nil {
		t.Fatalf("Import(redis) error: %v", err)
	}
	if err := queue.Export(ctx, r, &file2); err != nil {
		t.Fatalf("Export(redis) error: %v", err)
	}
	b2 := MustOpen(t, boltstore.Options{NoSync: true})
	if _, err := queue.Import(ctx, b2, bytes.NewReader(file2.Bytes())); err != nil {
		t.Fatalf("Import(bbolt) error: %v", err)
	}
	if err := queue.Export(ctx, b2, &file3); err != nil {
		t.Fatalf("Export(bbolt) error: %v", err)
	}
	if diff := cmp.Diff(file1.String(), file3.String()); diff != "" {
		t.Errorf("bbolt → Redis → bbolt export differs (-first +last):\n%s", diff)
	}
	s1, _ := b1.Stats(ctx)
	s2, _ := r.Stats(ctx)
	s1.OldestLeaseAge, s2.OldestLeaseAge = 0, 0
	if s1 != s2 {
		t.Errorf("Redis Stats() after import = %+v, want bbolt's %+v", s2, s1)
	}
}
