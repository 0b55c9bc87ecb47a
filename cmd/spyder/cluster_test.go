package main

import (
	"strings"
	"testing"

	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestE2E_FleetSurvivesSIGKILL_Cluster is TestE2E_FleetSurvivesSIGKILL on
// a 3-master Redis Cluster named by its node list: the queue is split into
// the default 64 shards over the masters, and every host still gets done.
func TestE2E_FleetSurvivesSIGKILL_Cluster(t *testing.T) {
	t.Parallel()
	c := redistest.SharedCluster(t)
	key := redistest.Prefix(t)
	fleetSurvivesSIGKILL(t, strings.Join(c.Addrs(), ","), key)
	out := runApp(t, "queue", "stats", "--redis", c.Addrs()[0], "--queue-key", key)
	if !strings.Contains(out, "600") {
		t.Errorf("queue stats on the cluster after the crawl:\n%s\nwant the 600 hosts seen", out)
	}
	_, errOut, err := tryApp(t.Context(), "queue", "stats", "--redis", c.Addrs()[0], "--queue-key", key, "--shards", "8")
	if err == nil || !strings.Contains(errOut+err.Error(), "--shards 8 disagrees with the 64 shards") {
		t.Errorf("queue stats --shards 8 on a 64-shard queue: err %v, stderr %q; want it refused", err, errOut)
	}
}
