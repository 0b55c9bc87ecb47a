package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestSharded_SpreadsOverMasters: after 30,000 hosts are seeded into the
// default shard count of a 3-master cluster, each master holds between 25%
// and 42% of the pending items.
func TestSharded_SpreadsOverMasters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redistest.SharedCluster(t)
	b, err := redisstore.Dial(ctx, strings.Join(c.Addrs(), ","), redisstore.Options{Key: redistest.Prefix(t)})
	if err != nil {
		t.Fatalf("Dial() error: %v", err)
	}
	defer b.Close()
	s := b.(*redisstore.Sharded)
	if n := len(s.Shards()); n != 64 {
		t.Fatalf("default shards on 3 masters = %d, want 64", n)
	}
	hosts := make([]host.Name, 30000)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("www.site%d.com", i))
	}
	if r, err := s.Seed(ctx, hosts); err != nil || r.Added != len(hosts) {
		t.Fatalf("Seed() = %+v, %v; want %d added", r, err, len(hosts))
	}
	perMaster := map[string]int64{}
	for _, sh := range s.Shards() {
		n, err := s.Client().LLen(ctx, sh.Key()).Result()
		if err != nil {
			t.Fatal(err)
		}
		perMaster[c.MasterOf(t, sh.Key()).Addr] += n
	}
	t.Logf("pending items per master: %v", perMaster)
	if len(perMaster) != 3 {
		t.Fatalf("pending items on %d masters, want 3: %v", len(perMaster), perMaster)
	}
	for m, n := range perMaster {
		if share := float64(n) / float64(len(hosts)); share < 0.25 || share > 0.42 {
			t.Errorf("master %s holds %.1f%% of the pending items, want 25%% to 42%% (%v)", m, 100*share, perMaster)
		}
	}
}

// TestSharded_Lease_RotatesShards: one item in each of 4 shards; four
// leases of one item each, taken as the clock moves on, come from four
// different shards, so a busy first shard does not starve the others.
func TestSharded_Lease_RotatesShards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	s, err := redisstore.OpenSharded(ctx, MustClient(t), redistest.Prefix(t), 4, redisstore.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var hosts []host.Name
	perShard := map[string]bool{}
	for i := 0; len(perShard) < 4; i++ {
		h := host.Name(fmt.Sprintf("h%d.com", i))
		if r, _ := s.Seed(ctx, []host.Name{h}); r.Added != 1 {
			t.Fatalf("Seed(%s) added nothing", h)
		}
		hosts = append(hosts, h)
		for _, sh := range s.Shards() {
			if n, _ := s.Client().LLen(ctx, sh.Key()).Result(); n > 0 {
				perShard[sh.Key()] = true
			}
		}
	}
	if len(hosts) > 40 {
		t.Fatalf("needed %d hosts to fill 4 shards", len(hosts))
	}
	// Lease one from each shard in turn: the shard whose list shrank.
	from := map[string]bool{}
	for range 4 {
		clk.Add(20 * time.Millisecond) // Lease starts at the next shard
		before := shardLens(t, s)
		if ls, err := s.Lease(ctx, 1, time.Minute, 0); err != nil || len(ls) != 1 {
			t.Fatalf("Lease(1) = %v, %v", ls, err)
		}
		for k, n := range shardLens(t, s) {
			if n < before[k] {
				from[k] = true
			}
		}
	}
	if len(from) != 4 {
		t.Errorf("4 leases came from %d shards, want 4 (rotation)", len(from))
	}
}

func shardLens(t *testing.T, s *redisstore.Sharded) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, sh := range s.Shards() {
		n, err := s.Client().LLen(context.Background(), sh.Key()).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[sh.Key()] = n
	}
	return out
}

// TestSharded_Lease_DoesNotSpinOnEmptyShards: a Lease that waits a second
// on 16 empty shards asks each only a few times (it remembers empty ones),
// where asking every shard at every 2-100ms poll would take hundreds of
// script calls.
func TestSharded_Lease_DoesNotSpinOnEmptyShards(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	s := MustOpenSharded(t, c, "", 16)
	before := evalCalls(t, c)
	if ls, err := s.Lease(ctx, 1, time.Minute, time.Second); err != nil || len(ls) != 0 {
		t.Fatalf("Lease(wait 1s) on an empty queue = %v, %v; want none", ls, err)
	}
	if calls := evalCalls(t, c) - before; calls > 16*8 {
		t.Errorf("Lease(wait 1s) on 16 empty shards made %d script calls, want at most %d", calls, 16*8)
	}
}

// evalCalls returns how many EVALSHA calls the server has run.
func evalCalls(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
			n, _ := strconv.Atoi(v[:strings.IndexByte(v, ',')])
			return n
		}
	}
	return 0
}
