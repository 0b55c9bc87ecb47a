package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

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
