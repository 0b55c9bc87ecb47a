package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

// Dial opens the queue under o.Key at addr (see [NewClient] for its forms)
// as the --redis flag means it: on a single server the one queue [Connect]
// opens, unless o.Shards (or the count stored with the queue) asks for
// shards; on a Redis Cluster, named by a comma-separated list of its nodes
// or by the address of any one of them, a [Sharded] queue. The backend
// owns the client it made. Errors are one line naming the server, and a
// refused call writes nothing.
func Dial(ctx context.Context, addr string, o Options) (store.Backend, error) {
	silenceOnce.Do(func() { redis.SetLogger(quiet{}) })
	name := "redis " + redact(addr)
	c, masters, err := dialClient(ctx, addr)
	if err != nil {
		return nil, err
	}
	b, err := openDialed(ctx, c, masters, o)
	if err != nil {
		c.Close()
		if Transient(err) { // it went away while the queue was being opened
			return nil, fmt.Errorf("%s does not answer: %w", name, err)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	switch b := b.(type) {
	case *Store:
		b.name, b.ownsClient = name+" key "+b.base, true
	case *Sharded:
		b.name, b.ownsClient = fmt.Sprintf("%s key %s (%d shards)", name, b.base, len(b.shards)), true
	}
	return b, nil
}

// openDialed opens the queue in c, a cluster of masters masters (0: a
// single server), choosing the layout as [Dial] says.
func openDialed(ctx context.Context, c redis.UniversalClient, masters int, o Options) (store.Backend, error) {
	if o.Key == "" {
		o.Key = queue.DefaultKey
	}
	base := o.Key
	if o.Shards < 0 || o.Shards > maxShards {
		return nil, fmt.Errorf("--shards %d: want 1 to %d", o.Shards, maxShards)
	}
	if tag := hashTag(base); tag != "" {
		if o.Shards > 1 {
			return nil, fmt.Errorf("--queue-key %q carries the hash tag {%s}, which holds the whole queue in one slot; drop the braces to shard it (each shard gets its own tag)", base, tag)
		}
		return Open(ctx, c, o) // today's layout: one queue under the tag
	}
	n, err := shardCount(ctx, c, base, masters, o.Shards)
	if err != nil {
		return nil, err
	}
	if n == 1 && masters == 0 {
		return Open(ctx, c, o)
	}
	return openSharded(ctx, c, base, n, o)
}

// dialClient makes the client for addr and reports how many masters serve
// the cluster it names (0 for a single server). It checks that the server
// answers and that a cluster has every slot served.
func dialClient(ctx context.Context, addr string) (redis.UniversalClient, int, error) {
	name := "redis " + redact(addr)
	var seeds []*redis.Client
	defer func() {
		for _, s := range seeds {
			s.Close()
		}
	}()
	if strings.Contains(addr, "://") || !strings.Contains(addr, ",") {
		c, err := NewClient(addr)
		if err != nil {
			return nil, 0, err
		}
		seeds = append(seeds, c.(*redis.Client))
	} else {
		for _, a := range strings.Split(addr, ",") {
			hp, err := hostPort(strings.TrimSpace(a))
			if err != nil {
				return nil, 0, fmt.Errorf("redis cluster address list %q: %w", addr, err)
			}
			seeds = append(seeds, redis.NewClient(&redis.Options{Addr: hp}))
		}
	}
	// A node of a list that does not answer is passed over while another
	// answers: a cluster's node list keeps naming a master that died and
	// was replaced by its replica.
	var inCluster, alone []string
	var silent error
	for _, s := range seeds {
		on, err := clusterEnabled(ctx, s)
		if err != nil && strings.Contains(err.Error(), "SELECT is not allowed in cluster mode") {
			return nil, 0, fmt.Errorf("%s: a Redis Cluster has only database 0, not %d", name, s.Options().DB)
		}
		if err != nil {
			silent = cmp.Or(silent, err)
			continue
		}
		if on {
			inCluster = append(inCluster, s.Options().Addr)
		} else {
			alone = append(alone, s.Options().Addr)
		}
	}
	switch {
	case len(inCluster) == 0 && len(alone) == 0:
		return nil, 0, fmt.Errorf("%s does not answer: %w", name, silent)
	case len(inCluster) > 0 && len(alone) > 0:
		return nil, 0, fmt.Errorf("%s: %s is a Redis Cluster node but %s is not; list the nodes of one cluster", name, inCluster[0], alone[0])
	case len(inCluster) == 0 && len(seeds) > 1:
		return nil, 0, fmt.Errorf("%s: none of these servers is a Redis Cluster node; give one address for a single server", name)
	case len(inCluster) == 0:
		c := seeds[0]
		seeds = nil // the one client is the store's
		return c, 0, nil
	}
	opt := seeds[0].Options()
	cc := newClusterClient(&redis.ClusterOptions{Addrs: inCluster,
		Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig,
		DialTimeout: opt.DialTimeout, ReadTimeout: opt.ReadTimeout, WriteTimeout: opt.WriteTimeout})
	masters, err := checkCluster(ctx, cc)
	if err != nil {
		cc.Close()
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	return cc, masters, nil
}

// clusterEnabled reports whether the server at c runs in cluster mode,
// after checking within a few seconds that it answers. A server that
// refuses INFO (an ACL user without it) is taken as a single server.
func clusterEnabled(ctx context.Context, c *redis.Client) (bool, error) {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, err
	}
	info, err := c.Info(pctx, "cluster").Result()
	if err != nil {
		return false, nil
	}
	return infoField(info, "cluster_enabled") == "1", nil
}

// checkCluster checks that every slot of the cluster is served and returns
// how many masters serve them.
func checkCluster(ctx context.Context, c *redis.ClusterClient) (int, error) {
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		return 0, interpret("cluster info", err)
	}
	if st, assigned := infoField(info, "cluster_state"), infoField(info, "cluster_slots_assigned"); st != "ok" || assigned != strconv.Itoa(clusterSlots) {
		return 0, fmt.Errorf("the cluster is not serving every slot (cluster_state:%s, %s of %d slots assigned); fix it first, e.g. redis-cli --cluster fix", st, assigned, clusterSlots)
	}
	masters, _ := strconv.Atoi(infoField(info, "cluster_size"))
	return max(masters, 1), nil
}

// infoField returns the value of name in an INFO-style reply, or "".
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// shardCount returns how many shards the queue under base has: the count
// stored with it, or (none stored) want, else the default (1 on a single
// server, [defaultShards] on a cluster), which it then stores. It refuses,
// writing nothing, a want that disagrees with the stored count, and
// sharding a single server's queue that holds unsharded state.
func shardCount(ctx context.Context, c redis.UniversalClient, base string, masters, want int) (int, error) {
	for {
		v, err := c.Get(ctx, shardsKey(base)).Result()
		if err == nil {
			stored, perr := strconv.Atoi(v)
			if perr != nil || stored < 1 || stored > maxShards {
				return 0, fmt.Errorf("key %s holds %q, not a shard count", shardsKey(base), v)
			}
			if want != 0 && want != stored {
				return 0, fmt.Errorf("--shards %d disagrees with the %d shards the queue under %q was made with (key %s); run with --shards %d, or export it and import it under a new --queue-key", want, stored, base, shardsKey(base), stored)
			}
			return stored, nil
		}
		if err != redis.Nil {
			return 0, interpret("read shard count", err)
		}
		n := want
		if n == 0 {
			n = 1
			if masters > 0 {
				n = defaultShards(masters)
			}
		}
		if n == 1 && masters == 0 {
			return 1, nil
		}
		if k, err := unshardedState(ctx, c, base); err != nil || k != "" {
			if err != nil {
				return 0, err
			}
			return 0, fmt.Errorf("key %s holds an unsharded queue; to shard it, export it (spyder queue export) and import it under a new --queue-key with --shards %d", k, n)
		}
		ok, err := c.SetNX(ctx, shardsKey(base), n, 0).Result()
		if err != nil {
			return 0, interpret("store shard count", err)
		}
		if ok {
			return n, nil
		}
		// Another probe stored a count first: check against it.
	}
}

// unshardedState returns the first key of the unsharded queue under base
// that holds state, or "".
func unshardedState(ctx context.Context, c redis.UniversalClient, base string) (string, error) {
	for _, k := range newKeys(base).state() {
		n, err := c.Exists(ctx, k).Result()
		if err != nil {
			return "", interpret("check keys", err)
		}
		if n > 0 {
			return k, nil
		}
	}
	return "", nil
}
