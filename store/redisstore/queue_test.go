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

// TestStore_Conformance runs the suite every backend passes. A reopen is
// a second Open of the same key on a new client to the same server, as
// another probe of the fleet (or the next run) gets; the first stays open.
func TestStore_Conformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) store.Backend { return MustOpen(t, "", nil) },
		Reopen: func(t *testing.T, b store.Backend) store.Backend {
			return MustOpen(t, b.(*redisstore.Store).Key(), nil)
		},
	})
}

// MustOpen opens a store under base on the shared test server (base ""
// means a fresh prefix) and closes store and client at the test's end.
func MustOpen(tb testing.TB, base string, opts *redisstore.Options) *redisstore.Store {
	tb.Helper()
	return MustOpenAt(tb, redistest.Addr(tb), base, opts)
}

// MustOpenAt is MustOpen on the server at addr.
func MustOpenAt(tb testing.TB, addr, base string, opts *redisstore.Options) *redisstore.Store {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	tb.Cleanup(func() { c.Close() })
	var o redisstore.Options
	if opts != nil {
		o = *opts
	}
	if base == "" {
		base = redistest.Prefix(tb)
	}
	o.Key = base
	s, err := redisstore.Open(context.Background(), c, o)
	if err != nil {
		tb.Fatalf("Open() error: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}
