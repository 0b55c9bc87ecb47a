package redisstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

func mustDial(t *testing.T, addr string, o redisstore.Options) store.Backend {
	t.Helper()
	b, err := redisstore.Dial(context.Background(), addr, o)
	if err != nil {
		t.Fatalf("Dial(%s, %+v) error: %v", addr, o, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// wantDialError checks that Dial fails with one line containing want.
func wantDialError(t *testing.T, addr string, o redisstore.Options, want string) {
	t.Helper()
	b, err := redisstore.Dial(context.Background(), addr, o)
	if err == nil {
		b.Close()
		t.Fatalf("Dial(%s, %+v) succeeded, want an error containing %q", addr, o, want)
	}
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Dial(%s, %+v) error = %q, want one line containing %q", addr, o, err, want)
	}
}

// TestDial_SingleServerKeepsTodaysKeys: on one server the default is the
// unsharded Store, so LLEN of the base key is the pending count.
func TestDial_SingleServerKeepsTodaysKeys(t *testing.T) {
	ctx := context.Background()
	key := redistest.Prefix(t)
	b := mustDial(t, redistest.Addr(t), redisstore.Options{Key: key})
	s, ok := b.(*redisstore.Store)
	if !ok {
		t.Fatalf("Dial(single server) = %T, want *redisstore.Store", b)
	}
	if _, err := s.Seed(ctx, []host.Name{"a.com", "b.org"}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Client().LLen(ctx, key).Result(); err != nil || n != 2 {
		t.Errorf("LLEN %s = %d, %v; want 2", key, n, err)
	}
	if n, _ := s.Client().Exists(ctx, key+":shards").Result(); n != 0 {
		t.Errorf("a single-shard queue wrote %s:shards", key)
	}
	// Sharding it now would hide those items: refused, nothing written.
	wantDialError(t, redistest.Addr(t), redisstore.Options{Key: key, Shards: 4}, "holds an unsharded queue")
	if n, _ := s.Client().Exists(ctx, key+":shards").Result(); n != 0 {
		t.Errorf("a refused Dial wrote %s:shards", key)
	}
}

// TestDial_StoredShardCount: the first Dial stores its count; a later one
// without --shards takes it, and one with another count is refused
// without writing anything.
func TestDial_StoredShardCount(t *testing.T) {
	ctx := context.Background()
	key := redistest.Prefix(t)
	addr := redistest.Addr(t)
	first := mustDial(t, addr, redisstore.Options{Key: key, Shards: 8}).(*redisstore.Sharded)
	if _, err := first.Seed(ctx, []host.Name{"a.com"}); err != nil {
		t.Fatal(err)
	}
	keysBefore, _ := first.Client().Keys(ctx, key+"*").Result()
	if again, ok := mustDial(t, addr, redisstore.Options{Key: key}).(*redisstore.Sharded); !ok || len(again.Shards()) != 8 {
		t.Fatalf("Dial without --shards did not take the stored 8 shards")
	}
	wantDialError(t, addr, redisstore.Options{Key: key, Shards: 16}, "--shards 16 disagrees with the 8 shards")
	wantDialError(t, addr, redisstore.Options{Key: key, Shards: 1}, "--shards 1 disagrees with the 8 shards")
	keysAfter, _ := first.Client().Keys(ctx, key+"*").Result()
	if len(keysAfter) != len(keysBefore) {
		t.Errorf("refused Dials changed the keys: %d before, %d after", len(keysBefore), len(keysAfter))
	}
	wantDialError(t, addr, redisstore.Options{Key: redistest.Prefix(t), Shards: 5000}, "--shards 5000: want 1 to 1024")
	wantDialError(t, addr, redisstore.Options{Key: "{tagged}:" + redistest.Prefix(t), Shards: 4}, "carries the hash tag {tagged}")
}

// TestDial_ClusterByAnyNode: one node's address, bare or as a redis://
// URL, or the list of nodes, opens the sharded queue on the cluster, with
// 64 shards on 3 masters; a key with a hash tag keeps today's single-slot
// queue and refuses --shards.
func TestDial_ClusterByAnyNode(t *testing.T) {
	c := redistest.SharedCluster(t)
	key := redistest.Prefix(t)
	for _, addr := range []string{c.Addrs()[1], "redis://" + c.Addrs()[2], strings.Join(c.Addrs(), ",")} {
		b, ok := mustDial(t, addr, redisstore.Options{Key: key}).(*redisstore.Sharded)
		if !ok || len(b.Shards()) != 64 {
			t.Fatalf("Dial(%s) is not a Sharded of 64 shards", addr)
		}
	}
	if _, ok := mustDial(t, c.Addrs()[0], redisstore.Options{Key: "{" + key + "}:q"}).(*redisstore.Store); !ok {
		t.Errorf("Dial(cluster, tagged key) is not today's Store")
	}
	wantDialError(t, c.Addrs()[0], redisstore.Options{Key: "{" + key + "}:q", Shards: 4}, "drop the braces")
	wantDialError(t, "redis://"+c.Addrs()[0]+"/2", redisstore.Options{Key: key}, "a Redis Cluster has only database 0, not 2")
}

// TestDial_MixedNodeList: a list naming a cluster node and a single server
// is refused; so is a list of single servers.
func TestDial_MixedNodeList(t *testing.T) {
	c := redistest.SharedCluster(t)
	single := redistest.Addr(t)
	wantDialError(t, c.Addrs()[0]+","+single, redisstore.Options{Key: redistest.Prefix(t)}, "is a Redis Cluster node but "+single+" is not")
	other := redistest.Start(t)
	wantDialError(t, single+","+other.Addr, redisstore.Options{Key: redistest.Prefix(t)}, "none of these servers is a Redis Cluster node")
}

// TestDial_ClusterWithUncoveredSlots: a cluster that serves only part of
// the slots is refused before anything is written.
func TestDial_ClusterWithUncoveredSlots(t *testing.T) {
	ctx := context.Background()
	c := redistest.StartCluster(t, 3, 0)
	for _, a := range c.Addrs() {
		rc := redis.NewClient(&redis.Options{Addr: a})
		rc.Do(ctx, "CLUSTER", "DELSLOTSRANGE", 0, 99) // the owner drops them; the others forget the owner
		rc.Close()
	}
	deadline := time.Now().Add(20 * time.Second)
	for c.WaitOK(0) == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	wantDialError(t, c.Addrs()[0], redisstore.Options{Key: "q"}, "not serving every slot")
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rc.Close()
	var n atomic.Int64
	rc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		k, _ := m.DBSize(ctx).Result()
		n.Add(k)
		return nil
	})
	if n.Load() != 0 {
		t.Errorf("a refused Dial left %d keys", n.Load())
	}
}
