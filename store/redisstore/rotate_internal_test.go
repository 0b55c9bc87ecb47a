package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestSharded_StartShardMovesEveryRotation: leases taken within one
// rotateEvery all start at the same shard (so calls made at about the same
// time share its script calls), and the next rotateEvery starts at the
// next shard, so every shard gets its turn and none starves.
func TestSharded_StartShardMovesEveryRotation(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	var clock atomic.Int64
	clock.Store(time.Now().Truncate(rotateEvery).UnixNano())
	const n = 8
	s, err := OpenSharded(ctx, c, redistest.Prefix(t), n, Options{Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hosts := make([]host.Name, 400)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("site%d.example", i))
	}
	if _, err := s.Seed(ctx, hosts); err != nil {
		t.Fatal(err)
	}
	shardOf := func() int {
		t.Helper()
		ls, err := s.Lease(ctx, 1, time.Minute, 0)
		if err != nil || len(ls) != 1 {
			t.Fatalf("Lease = %v, %v; want one lease", ls, err)
		}
		i, err := strconv.Atoi(ls[0].ID[strings.LastIndex(ls[0].ID, "@")+1:])
		if err != nil {
			t.Fatalf("lease ID %q names no shard", ls[0].ID)
		}
		return i
	}
	first := shardOf()
	for step := 0; step < 2*n; step++ {
		want := (first + step) % n
		for range 3 {
			if got := shardOf(); got != want {
				t.Fatalf("rotation %d: lease from shard %d, want %d (the start shard moves on once every %v)", step, got, want, rotateEvery)
			}
		}
		clock.Add(int64(rotateEvery))
	}
}
