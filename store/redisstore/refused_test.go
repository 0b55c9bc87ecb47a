package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestRefusesWrites: the errors of a real Redis that takes no writes (over
// maxmemory under noeviction; a replica) are told from those of a Redis
// that is only unreachable or given the wrong key, which a retry or the
// item's failure may get past.
func TestRefusesWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer c.Close()
	write := func() error { return c.LPush(ctx, "k", "v").Err() }

	if err := c.Set(ctx, "s", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	wrongType := c.LPush(ctx, "s", "v").Err()
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "100kb"}} {
		if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	oom := write()
	if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "REPLICAOF", "127.0.0.1", "1").Err(); err != nil { // a primary that is not there
		t.Fatal(err)
	}
	readOnly := write()
	srv.Stop()
	down := write()

	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"OOM", oom, true},
		{"READONLY", readOnly, true},
		{"WRONGTYPE", wrongType, false},
		{"server down", down, false},
		{"nil", nil, false},
	} {
		if tt.want && tt.err == nil {
			t.Errorf("%s: the write did not fail", tt.name)
		}
		if got := redisstore.RefusesWrites(tt.err); got != tt.want {
			t.Errorf("RefusesWrites(%s: %v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestStore_WritesRefused: what the store writes for a run (queued hosts,
// the seen set of the output, the spool) fails with an error that matches
// store.ErrWritesRefused when Redis is over maxmemory, keeping Redis's
// reason in its message, so a probe stops instead of failing host after
// host; an error of one key (a wrong type) does not match.
func TestStore_WritesRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	s := MustOpenAt(t, srv.Addr, "", nil)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	if err := c.Set(ctx, s.Key()+":spool", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sp, _ := s.Spool()
	if err := sp.Put(ctx, []byte("b")); err == nil || errors.Is(err, store.ErrWritesRefused) {
		t.Errorf("Spool.Put on a key of the wrong type = %v; want an error that is not ErrWritesRefused", err)
	}
	c.Del(ctx, s.Key()+":spool")
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
		if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	em, _ := s.Emitted()
	_, seedErr := s.Seed(ctx, []host.Name{"a.com"})
	for name, err := range map[string]error{
		"Seed":         seedErr,
		"Spool.Put":    sp.Put(ctx, []byte("b")),
		"Emitted.Mark": em.Mark(ctx, "run", []string{"k"}),
	} {
		if !errors.Is(err, store.ErrWritesRefused) || !strings.Contains(fmt.Sprint(err), "OOM") {
			t.Errorf("%s on a full Redis = %v; want an error matching store.ErrWritesRefused with Redis's OOM reason", name, err)
		}
	}
}
