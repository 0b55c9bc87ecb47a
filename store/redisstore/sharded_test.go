package redisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
	"github.com/spyder-crawler/spyder/store/storetest"
)

// TestSharded_Conformance runs the suite every backend passes on a sharded
// queue: 4 shards on the single test server, and the default 64 shards on
// a 3-master Redis Cluster.
func TestSharded_Conformance(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
		shards int
	}{
		{"Single4", MustClient, 4},
		{"Cluster64", MustClusterClient, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, storetest.Harness{
				New: func(t *testing.T) store.Backend {
					return MustOpenSharded(t, tc.client(t), "", tc.shards)
				},
				Reopen: func(t *testing.T, b store.Backend) store.Backend {
					return MustOpenSharded(t, tc.client(t), b.(*redisstore.Sharded).Key(), tc.shards)
				},
			})
		})
	}
}

// MustClient returns a client of the shared test server, closed at the
// test's end.
func MustClient(t *testing.T) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { c.Close() })
	return c
}

// MustClusterClient returns a client of the shared test cluster, closed at
// the test's end.
func MustClusterClient(t *testing.T) redis.UniversalClient {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.SharedCluster(t).Addrs()})
	t.Cleanup(func() { c.Close() })
	return c
}

// MustOpenSharded opens a queue of n shards under base in c (base "" means
// a fresh prefix) and closes it at the test's end.
func MustOpenSharded(tb testing.TB, c redis.UniversalClient, base string, n int) *redisstore.Sharded {
	tb.Helper()
	if base == "" {
		base = redistest.Prefix(tb)
	}
	s, err := redisstore.OpenSharded(context.Background(), c, base, n, redisstore.Options{})
	if err != nil {
		tb.Fatalf("OpenSharded(%d) error: %v", n, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// TestSharded_DropRun checks that dropping a run of a sharded queue on the
// cluster forgets its keys in every shard, counts them all, and keeps the
// other runs.
func TestSharded_DropRun(t *testing.T) {
	ctx := t.Context()
	s := MustOpenSharded(t, MustClusterClient(t), "", 8)
	e, err := s.Emitted()
	if err != nil {
		t.Fatalf("Emitted: %v", err)
	}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("node %d", i)
	}
	for _, run := range []string{"r1", "r2"} {
		if err := e.Mark(ctx, run, keys); err != nil {
			t.Fatalf("Mark %s: %v", run, err)
		}
	}
	n, err := e.(store.RunDropper).DropRun(ctx, "r1")
	if err != nil || n != int64(len(keys)) {
		t.Fatalf("DropRun = %d, %v; want %d", n, err, len(keys))
	}
	for run, want := range map[string]bool{"r1": false, "r2": true} {
		seen, err := e.Seen(ctx, run, keys)
		if err != nil {
			t.Fatalf("Seen %s: %v", run, err)
		}
		for i, got := range seen {
			if got != want {
				t.Fatalf("Seen(%s, %q) = %v after dropping r1, want %v", run, keys[i], got, want)
			}
		}
	}
}

// TestDump_LeavesNoCopy checks that a dump deletes the copy of the state it
// read, the host table's buckets included, on one queue and on every
// shard of a sharded one.
func TestDump_LeavesNoCopy(t *testing.T) {
	ctx := t.Context()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	hosts := make([]host.Name, 500)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("h%d.example", i))
	}
	for _, tc := range []struct {
		name string
		b    store.Backend
	}{
		{"Store", mustOpen(t, c)},
		{"Sharded", MustOpenSharded(t, c, "", 4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.b.Seed(ctx, hosts); err != nil {
				t.Fatal(err)
			}
			n := 0
			if err := tc.b.Dump(ctx, func(queue.Record) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			if n < len(hosts) {
				t.Fatalf("Dump gave %d records, want at least %d", n, len(hosts))
			}
			if left := c.Keys(ctx, "*:dump-*").Val(); len(left) != 0 {
				t.Errorf("keys of the dump's copy left after it: %d, e.g. %s", len(left), left[0])
			}
		})
	}
}

func mustOpen(t *testing.T, c redis.UniversalClient) *redisstore.Store {
	t.Helper()
	s, err := redisstore.Open(t.Context(), c, redisstore.Options{Key: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
