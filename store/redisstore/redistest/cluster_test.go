package redistest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestStartCluster_Failover: a started cluster serves keys on every master,
// and when a master is killed its replica takes over and the key written
// (and replicated, WAIT) before is still there.
func TestStartCluster_Failover(t *testing.T) {
	ctx := context.Background()
	c := redistest.StartCluster(t, 3, 1)
	if got := len(c.Masters(t)); got != 3 {
		t.Fatalf("Masters() = %d, want 3", got)
	}
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rc.Close()
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m := c.MasterOf(t, "k")
	mc := redis.NewClient(&redis.Options{Addr: m.Addr})
	if n, err := mc.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v; want 1 replica", n, err)
	}
	mc.Close()
	pid := m.PID()
	m.Stop()
	if pid == 0 || m.PID() != 0 {
		t.Fatalf("PID before/after Stop = %d/%d, want nonzero/0", pid, m.PID())
	}
	if err := c.WaitOK(30 * time.Second); err != nil {
		t.Fatalf("WaitOK after killing %s: %v", m.Addr, err)
	}
	if nm := c.MasterOf(t, "k"); nm == m {
		t.Fatalf("MasterOf(k) = the killed node %s", m.Addr)
	}
	var got string
	var err error
	for try := 0; try < 100; try++ {
		if got, err = rc.Get(ctx, "k").Result(); err == nil {
			break
		}
		rc.ReloadState(ctx) // go-redis reloads slots on MOVED, not on a dead node
		time.Sleep(100 * time.Millisecond)
	}
	if got != "v" {
		t.Fatalf("Get(k) after failover = %q, %v; want v", got, err)
	}
}

// TestSharedCluster: the shared cluster has three masters and answers.
func TestSharedCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	if got := len(c.Masters(t)); got != 3 {
		t.Fatalf("Masters() = %d, want 3", got)
	}
}

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }
