package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestE2E_FleetRidesOutFailover_OneSlot runs a fleet of three `spyder run` probes
// on a Redis Cluster of three masters with a replica each, the whole queue
// in one slot (a tagged --queue-key; seeding with
// --redis-seed-wait), and SIGKILLs
// the master that holds the queue's slot mid-crawl. The probes wait for
// the replica to take over and finish the crawl: each exits 0, every
// seeded host is written and done in the queue (which a new process
// reads through the node list, the dead node included), none goes to
// dead, no stack trace, and the
// outage costs a few log lines, not a line per try. What asynchronous
// replication lost (acks, leases: hosts written twice) is logged.
func TestE2E_FleetRidesOutFailover_OneSlot(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 400, Seed: 15, HTTPLatency: 20 * time.Millisecond})
	c := redistest.StartCluster(t, 3, 1)
	const key = "{fleet}:queue"
	master := c.MasterOf(t, key)
	waitReplica(t, master.Addr)
	backend := []string{"--redis", strings.Join(c.Addrs(), ","), "--queue-key", key, "--lease", "8s", "--fleet-limiter", "--redis-seed-wait", "1s"}
	outs, procs := startFleet(t, w, 16, backend...)
	waitFor(t, 60*time.Second, "the fleet to write output", func() bool {
		return len(mustReadBatches(t, outs...).Probes) >= 60
	})
	master.Stop()
	killed := time.Now()
	for i, p := range procs {
		if err := p.wait(t, 60*time.Second); err != nil {
			t.Fatalf("probe %d: %v\n%s", i, err, p.log())
		}
	}
	t.Logf("fleet finished %v after the kill", time.Since(killed).Round(time.Millisecond))
	if nm := c.MasterOf(t, key); nm == master {
		t.Fatalf("the killed node %s still serves the queue", master.Addr)
	}
	all := mustReadBatches(t, outs...)
	checkEdges(t, w, all.Edges)
	twice := 0
	for _, n := range probeCounts(all.Probes) {
		if n > 1 {
			twice++
		}
	}
	checkEverySeedWritten(t, w, all)
	// A new process reads the queue after the failover, the dead node
	// still in its address list.
	checkFinished(t, w, "--redis", strings.Join(c.Addrs(), ","), "--queue-key", key)
	t.Logf("failover loss: %d of %d hosts written twice", twice, len(w.Seeds))
	for i, p := range procs {
		checkOutageLog(t, i, p.log())
	}
}

// waitReplica waits until the master at addr has a replica in sync
// (WAIT counts only those): one still in its first sync could not take
// over.
func waitReplica(t *testing.T, addr string) {
	t.Helper()
	mc := redis.NewClient(&redis.Options{Addr: addr})
	defer mc.Close()
	waitFor(t, 20*time.Second, "the replica of "+addr+" to sync", func() bool {
		n, err := mc.Wait(t.Context(), 1, 200*time.Millisecond).Result()
		return err == nil && n == 1
	})
}

// checkOutageLog checks a probe's log after a failover: no stack trace,
// no host sent to dead, no halt, and few warnings (a line per try would be
// hundreds).
func checkOutageLog(t *testing.T, i int, log string) {
	t.Helper()
	if strings.Contains(log, "goroutine ") || strings.Contains(log, "panic:") {
		t.Errorf("probe %d printed a stack trace:\n%s", i, log)
	}
	warns := map[string]int{}
	example := map[string]string{}
	total := 0
	for _, l := range strings.Split(log, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if lvl := m["level"]; lvl == "WARN" || lvl == "ERROR" {
			msg := fmt.Sprint(m["msg"])
			warns[msg]++
			example[msg] = l
			total++
		}
	}
	t.Logf("probe %d warnings and errors: %v", i, warns)
	for _, msg := range []string{"item_dead", "halt", "fail_error", "ack_error", "host_failed"} {
		if warns[msg] > 0 {
			t.Errorf("probe %d logged %s %d times during a failover, e.g. %s", i, msg, warns[msg], example[msg])
		}
	}
	if total-warns["lease_lost"] > 20 {
		t.Errorf("probe %d logged %d warnings during a failover, want a few: %v", i, total, warns)
	}
}

// TestApp_RedisSeedWaitNegative: a negative --redis-seed-wait is refused
// in one line naming the flag, before any server is dialed.
func TestApp_RedisSeedWaitNegative(t *testing.T) {
	_, _, err := tryApp(t.Context(), "queue", "stats", "--redis", "127.0.0.1:1", "--redis-seed-wait", "-1s")
	if err == nil || !strings.Contains(err.Error(), "--redis-seed-wait -1s: want 0 or more") {
		t.Fatalf("queue stats --redis-seed-wait -1s: err = %v, want the flag named", err)
	}
}
