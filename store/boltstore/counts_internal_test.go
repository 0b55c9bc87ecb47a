package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/storetest"
)

// mustMatchBuckets checks the kept sizes against a walk of the buckets.
func mustMatchBuckets(t *testing.T, s *Store, step string) {
	t.Helper()
	s.settled()
	err := s.db.View(func(tx *bbolt.Tx) error {
		got := readCounts(tx)
		want := counts{
			pending:    int64(tx.Bucket(bucketPending).Stats().KeyN),
			processing: int64(tx.Bucket(bucketProcessing).Stats().KeyN),
			dead:       int64(tx.Bucket(bucketDead).Stats().KeyN),
			seen:       int64(tx.Bucket(bucketSeen).Stats().KeyN),
		}
		if got != want {
			t.Errorf("after %s: kept counts %+v, buckets hold %+v", step, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCounts_FollowEveryChange(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1705312200, 0)
	path := filepath.Join(t.TempDir(), "spyder.db")
	s, err := Open(path, Options{NoSync: true, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	var hosts []host.Name
	for i := range 50 {
		h := host.Name(fmt.Sprintf("h%d.com", i))
		hosts = append(hosts, h, h)
	}
	step := func(name string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		mustMatchBuckets(t, s, name)
	}
	_, err = s.Seed(ctx, hosts)
	step("Seed", err)
	ls, err := s.Lease(ctx, 20, time.Minute, 0)
	step("Lease", err)
	step("Ack", storetest.Ack(ctx, s, ls[0]))
	if err := storetest.Ack(ctx, s, ls[0]); err == nil {
		t.Fatal("second Ack succeeded")
	}
	step("Ack again", nil)
	step("Fail to pending", s.Fail(ctx, ls[1], "x", 3))
	step("Fail to dead", s.Fail(ctx, ls[2], "x", 1))
	_, err = s.Extend(ctx, ls[3], time.Hour)
	step("Extend", err)
	_, err = s.Release(ctx, ls[4:8])
	step("Release", err)
	now = now.Add(2 * time.Minute)
	_, err = s.Reclaim(ctx, time.Minute, 1)
	step("Reclaim", err)
	_, err = s.RetryDead(ctx, 3)
	step("RetryDead", err)
	_, err = s.PurgeDead(ctx)
	step("PurgeDead", err)

	s2, err := Open(filepath.Join(t.TempDir(), "two.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	recs := []queue.Record{
		{Kind: queue.KindPending, Raw: []byte("junk")},
		{Kind: queue.KindPending, Item: &queue.Item{Host: "a.com"}},
		{Kind: queue.KindProcessing, Item: &queue.Item{Host: "b.com"}, LeaseID: "x", Deadline: now},
		{Kind: queue.KindDead, Raw: []byte("junk"), Error: "e"},
		{Kind: queue.KindSeen, Host: "a.com"},
	}
	if err := s2.Load(ctx, recs); err != nil {
		t.Fatal(err)
	}
	mustMatchBuckets(t, s2, "Load")
	if _, err := s2.Lease(ctx, 5, time.Minute, 0); err != nil { // junk goes dead on the way
		t.Fatal(err)
	}
	mustMatchBuckets(t, s2, "Lease past junk")

	// A file without kept counts (an older file) gets them on open.
	err = s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyCounts) })
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path, Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	mustMatchBuckets(t, s, "reopen without counts")
}
