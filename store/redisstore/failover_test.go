package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// attempts is a go-redis hook that sees every try of a command below the
// failover retries: how many were made since mark, and how they failed.
type attempts struct {
	mu      sync.Mutex
	since   time.Time // zero: not counting yet
	n       int
	kinds   map[string]int
	firstOK time.Time // first command served after since
}

func (a *attempts) mark() {
	a.mu.Lock()
	a.since, a.n, a.kinds = time.Now(), 0, map[string]int{}
	a.mu.Unlock()
}

func (a *attempts) note(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.since.IsZero() || !a.firstOK.IsZero() {
		return
	}
	a.n++
	if err == nil || err == redis.Nil {
		a.firstOK = time.Now()
		return
	}
	kind, _, _ := strings.Cut(err.Error(), " ")
	if redisstore.Transient(err) && strings.Contains(err.Error(), "connect") {
		kind = "connect"
	}
	a.kinds[kind]++
}

func (a *attempts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (a *attempts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil {
			err = cmd.Err()
		}
		a.note(err)
		return err
	}
}

func (a *attempts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		a.note(err)
		return err
	}
}

// TestFailover_StoreRidesOutMasterKill kills, mid-work, the master that
// holds a store's slot on a cluster of three masters with one replica
// each. Workers leasing and acking through a client from NewClient see no
// error: the calls of the outage wait until the replica has taken over
// (scripts and all), costing a few tries a second each, not a loop. No
// host is lost: each is acked, or (an ack the replica never got) still
// leased.
func TestFailover_StoreRidesOutMasterKill(t *testing.T) {
	ctx := context.Background()
	c := redistest.StartCluster(t, 3, 1)
	client, err := redisstore.NewClient(strings.Join(c.Addrs(), ","))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	obs := &attempts{}
	client.AddHook(obs)
	const key = "{failover}:queue"
	s, err := redisstore.Open(ctx, client, redisstore.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hosts := make([]host.Name, 300)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("h%d.example", i))
	}
	if _, err := s.Seed(ctx, hosts); err != nil {
		t.Fatal(err)
	}
	master := c.MasterOf(t, key)
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	if n, err := mc.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v; want the seeds on the replica", n, err)
	}
	mc.Close()

	var mu sync.Mutex
	acked := map[host.Name]int{}
	var errs []error
	var wg sync.WaitGroup
	const workers = 4
	for range workers {
		wg.Go(func() {
			if err := work(ctx, s, &mu, acked); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	waitUntil(t, 20*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 60 })
	obs.mark()
	master.Stop()
	wg.Wait()
	for _, err := range errs {
		t.Errorf("a worker's call failed during the failover: %v", err)
	}

	obs.mu.Lock()
	outage, tries, kinds := obs.firstOK.Sub(obs.since), obs.n, obs.kinds
	obs.mu.Unlock()
	t.Logf("outage %v: %d tries of commands, failures %v", outage.Round(time.Millisecond), tries, kinds)
	if outage <= 0 || len(kinds) == 0 {
		t.Fatalf("no command failed or was served after the kill (outage %v, failures %v): the failover was not met", outage, kinds)
	}
	// Each waiting command tries about once a second after a few quick
	// tries; a loop would make thousands.
	if most := workers * (12 + 2*int(outage.Seconds())); tries > most {
		t.Errorf("%d tries during a %v outage with %d workers, want at most %d (no hot loop)", tries, outage, workers, most)
	}
	if nm := c.MasterOf(t, key); nm == master {
		t.Fatalf("the killed node %s still serves the queue", master.Addr)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Seen != int64(len(hosts)) || st.Pending != 0 {
		t.Errorf("after the failover Stats = %+v, want seen %d, none pending", st, len(hosts))
	}
	if missing := int64(len(hosts) - len(acked)); st.Processing < missing {
		t.Errorf("%d hosts never acked but only %d leased: hosts lost in the failover", missing, st.Processing)
	}
}

// work leases and acks hosts of s until none is pending, noting each ack.
func work(ctx context.Context, s *redisstore.Store, mu *sync.Mutex, acked map[host.Name]int) error {
	for {
		ls, err := s.Lease(ctx, 5, time.Minute, 0)
		if err != nil {
			return fmt.Errorf("lease: %w", err)
		}
		if len(ls) == 0 {
			st, err := s.Stats(ctx)
			if err != nil {
				return fmt.Errorf("stats: %w", err)
			}
			if st.Pending == 0 {
				return nil
			}
			continue
		}
		time.Sleep(20 * time.Millisecond) // the probe
		ps := make([]queue.Probe, len(ls))
		for i, l := range ls {
			ps[i] = queue.Probe{Host: l.Item.Host, At: time.Now().Unix(), Outcome: "ok"}
		}
		ok, err := s.AckAll(ctx, ls, ps)
		if err != nil {
			return fmt.Errorf("ack: %w", err)
		}
		mu.Lock()
		for i, l := range ls {
			if ok[i] {
				acked[l.Item.Host]++
			}
		}
		mu.Unlock()
	}
}

func waitUntil(tb testing.TB, d time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("condition not met within %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTransient: what a failover makes go-redis return is transient; what
// a command or the caller caused is not.
func TestTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	rc := redis.NewClient(&redis.Options{Addr: dead, MaxRetries: -1})
	refused := rc.Ping(context.Background()).Err()
	rc.Close()

	live := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer live.Close()
	unknown := live.Do(context.Background(), "NOSUCHCOMMAND").Err()
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	canceled := live.Ping(cctx).Err()

	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", refused, true},
		{"unknown command", unknown, false},
		{"context canceled", canceled, false},
		{"nil", nil, false},
		{"no key", redis.Nil, false},
	} {
		if got := redisstore.Transient(tt.err); got != tt.want {
			t.Errorf("Transient(%s: %v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
