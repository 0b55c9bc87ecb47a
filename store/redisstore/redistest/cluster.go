package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of redis-server processes on loopback ports,
// joined with redis-cli --cluster create: masters that split the 16384
// slots evenly, each with its replicas.
type Cluster struct {
	// Nodes are every server of the cluster, masters first as created
	// (a failover may since have promoted a replica).
	Nodes []*Server
}

var (
	sharedClusterOnce sync.Once
	sharedCluster     *Cluster
	sharedClusterErr  error
)

// clusterArgs are the redis-server arguments of a cluster node. A short
// node timeout makes a killed master's replica take over within seconds;
// no diskless-sync delay lets a new replica sync at once.
var clusterArgs = []string{"--cluster-enabled", "yes", "--cluster-node-timeout", "2000", "--repl-diskless-sync-delay", "0"}

// StartCluster starts a cluster of masters masters with replicas replicas
// each, waits until every node reports cluster_state:ok, and stops it at the
// test's end. It skips (or fails, as [Addr] does) without redis-server and
// redis-cli.
func StartCluster(tb testing.TB, masters, replicas int) *Cluster {
	tb.Helper()
	requireTool(tb, "redis-server", "Redis")
	requireTool(tb, "redis-cli", "Redis Cluster")
	c, err := startCluster(func() (string, error) { return tb.TempDir(), nil }, masters, replicas)
	if c != nil {
		tb.Cleanup(c.Stop)
	}
	if err != nil {
		tb.Fatalf("redistest: start cluster: %v", err)
	}
	return c
}

// SharedCluster returns the package's shared 3-master cluster (no
// replicas), starting it on first use; [Main] stops it. Give every test its
// own key prefix with [Prefix], as with [Addr].
func SharedCluster(tb testing.TB) *Cluster {
	tb.Helper()
	requireTool(tb, "redis-server", "Redis")
	requireTool(tb, "redis-cli", "Redis Cluster")
	sharedClusterOnce.Do(func() {
		sharedCluster, sharedClusterErr = startCluster(func() (string, error) { return os.MkdirTemp("", "redistest-cluster-") }, 3, 0)
	})
	if sharedClusterErr != nil {
		tb.Fatalf("redistest: start shared cluster: %v", sharedClusterErr)
	}
	return sharedCluster
}

func startCluster(newDir func() (string, error), masters, replicas int) (*Cluster, error) {
	if masters < 3 {
		return nil, fmt.Errorf("a cluster needs at least 3 masters, got %d", masters)
	}
	c := &Cluster{}
	for i := 0; i < masters*(1+replicas); i++ {
		dir, err := newDir()
		if err != nil {
			return c, err
		}
		s := &Server{dir: dir, args: clusterArgs}
		if err := s.start(); err != nil {
			return c, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return c, fmt.Errorf("redis-cli --cluster create: %v: %s", err, out)
	}
	if err := c.WaitOK(30 * time.Second); err != nil {
		return c, err
	}
	return c, c.waitReplicasSynced(30 * time.Second)
}

// waitReplicasSynced waits until every replica has finished its first sync
// with its master (master_link_status:up), so that a test that kills a
// master right away kills one whose writes the replica is receiving.
func (c *Cluster) waitReplicasSynced(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, s := range c.Nodes {
		rc := redis.NewClient(&redis.Options{Addr: s.Addr})
		for {
			info, err := rc.Info(context.Background(), "replication").Result()
			if err == nil && (strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up")) {
				break
			}
			if time.Now().After(deadline) {
				rc.Close()
				return fmt.Errorf("replica %s did not sync with its master: %v", s.Addr, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		rc.Close()
	}
	return nil
}

// Addrs returns the address of every node, masters first as created.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr
	}
	return out
}

// Stop kills every node and removes their directories.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes {
		s.Stop()
		os.RemoveAll(s.dir)
	}
}

// WaitOK waits until every live node reports cluster_state:ok and knows
// every slot's master, e.g. after a failover.
func (c *Cluster) WaitOK(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.checkOK()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) checkOK() error {
	ctx := context.Background()
	for _, s := range c.Nodes {
		if !s.running() {
			continue
		}
		if err := c.checkNode(ctx, s.Addr); err != nil {
			return fmt.Errorf("%s: %w", s.Addr, err)
		}
	}
	return nil
}

// checkNode checks that the node at addr reports cluster_state:ok and
// that the master it names for every slot is alive.
func (c *Cluster) checkNode(ctx context.Context, addr string) error {
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	info, err := rc.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return fmt.Errorf("cluster_state is not ok")
	}
	slots, err := rc.ClusterSlots(ctx).Result()
	if err != nil {
		return err
	}
	covered := 0
	for _, r := range slots {
		if len(r.Nodes) == 0 || !c.alive(r.Nodes[0].Addr) {
			return fmt.Errorf("slots %d-%d have no live master", r.Start, r.End)
		}
		covered += int(r.End - r.Start + 1)
	}
	if covered != 16384 {
		return fmt.Errorf("%d of 16384 slots covered", covered)
	}
	return nil
}

// alive reports whether addr is a running node of the cluster.
func (c *Cluster) alive(addr string) bool {
	for _, s := range c.Nodes {
		if s.Addr == addr {
			return s.running()
		}
	}
	return false
}

// MasterOf returns the node that serves key's slot now, as a live node
// tells it, for a test that kills it.
func (c *Cluster) MasterOf(tb testing.TB, key string) *Server {
	tb.Helper()
	ctx := context.Background()
	for _, s := range c.Nodes {
		if !s.running() {
			continue
		}
		rc := redis.NewClient(&redis.Options{Addr: s.Addr})
		defer rc.Close()
		slot, err := rc.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			continue
		}
		slots, err := rc.ClusterSlots(ctx).Result()
		if err != nil {
			continue
		}
		for _, r := range slots {
			if int64(r.Start) <= slot && slot <= int64(r.End) && len(r.Nodes) > 0 {
				for _, n := range c.Nodes {
					if n.Addr == r.Nodes[0].Addr {
						return n
					}
				}
			}
		}
	}
	tb.Fatalf("redistest: no live node knows the master of %q", key)
	return nil
}

// Masters returns the nodes that are masters now and alive.
func (c *Cluster) Masters(tb testing.TB) []*Server {
	tb.Helper()
	var out []*Server
	for _, s := range c.Nodes {
		if !s.running() {
			continue
		}
		rc := redis.NewClient(&redis.Options{Addr: s.Addr})
		role, err := rc.Do(context.Background(), "ROLE").Slice()
		rc.Close()
		if err != nil {
			tb.Fatalf("redistest: ROLE on %s: %v", s.Addr, err)
		}
		if len(role) > 0 && role[0] == "master" {
			out = append(out, s)
		}
	}
	return out
}

// PID returns the server's process ID, or 0 when it is stopped.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *Server) running() bool { return s.PID() != 0 }
