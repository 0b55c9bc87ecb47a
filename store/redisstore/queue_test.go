package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"spyder/queue"
	"spyder/queue/queuetest"
	"spyder/store/redisstore"
	"spyder/store/redisstore/redistest"
)

// TestStore_Conformance runs the suite every queue backend passes.
func TestStore_Conformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queue.Queue {
		return MustOpen(t, redistest.Prefix(t), nil)
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
