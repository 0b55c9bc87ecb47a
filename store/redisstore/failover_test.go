package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// attempts is a go-redis hook that sees every try of a command below the
// failover retries: how many were made since mark, how they failed, and
// when the first was served after a failure.
type attempts struct {
	mu      sync.Mutex
	since   time.Time // zero: not counting yet
	n       int
	kinds   map[string]int
	firstOK time.Time // first command served after a failure since since
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
		if len(a.kinds) > 0 { // a reply read before the kill took effect is not the end of the outage
			a.firstOK = time.Now()
		}
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
// each. Workers leasing, writing (the output's seen set: a script and a
// transaction) and acking through a client from NewClient see no error: the calls of the outage wait until the replica has taken over
// (scripts and all), costing a few tries a second each, not a loop. No
// host is lost: each is acked, or (an ack the replica never got) still
// leased. What asynchronous replication lost of the writes just before
// the kill is logged; with Options.SeedWait no seed may be lost.
func TestFailover_StoreRidesOutMasterKill(t *testing.T) {
	for _, tt := range []struct {
		name string
		wait time.Duration
	}{{"async", 0}, {"seed-wait", time.Second}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testFailover(t, tt.wait)
		})
	}
}

func testFailover(t *testing.T, seedWait time.Duration) {
	ctx := context.Background()
	c := redistest.StartCluster(t, 3, 1)
	client := clientOf(t, c)
	obs := &attempts{}
	client.AddHook(obs)
	const key = "{failover}:queue"
	s, err := redisstore.Open(ctx, client, redisstore.Options{Key: key, SeedWait: seedWait})
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
	defer mc.Close()
	// The replica may still be in its first sync: wait for it to count.
	waitUntil(t, 20*time.Second, func() bool { n, err := mc.Wait(ctx, 1, 500*time.Millisecond).Result(); return err == nil && n == 1 })

	f := &fleet{s: s, em: redisstore.NewEmitted(client, key), acked: map[host.Name]int{}, leased: map[host.Name]int{}, stop: make(chan struct{})}
	var wg, seeder sync.WaitGroup
	const workers = 4
	for range workers {
		wg.Go(func() { f.note(f.work(ctx)) })
	}
	stopSeeds := make(chan struct{})
	seeder.Go(func() { f.note(f.seed(ctx, stopSeeds)) })
	waitUntil(t, 20*time.Second, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.acked) >= 60 })
	obs.mark()
	master.Stop()
	// A transaction (the output's seen-set mark) sent into the outage.
	if err := f.em.Mark(ctx, "run", []string{"during-the-outage"}); err != nil {
		t.Errorf("Mark sent during the failover: %v", err)
	}
	waitUntil(t, 30*time.Second, func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return !obs.firstOK.IsZero() })
	time.Sleep(200 * time.Millisecond)
	close(stopSeeds)
	seeder.Wait()
	close(f.stop)
	wg.Wait()
	for _, err := range f.errs {
		t.Errorf("a call failed during the failover: %v", err)
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
	if most := (workers + 1) * (12 + 2*int(outage.Seconds())); tries > most {
		t.Errorf("%d tries during a %v outage with %d callers, want at most %d (no hot loop)", tries, outage, workers+1, most)
	}
	if nm := c.MasterOf(t, key); nm == master {
		t.Fatalf("the killed node %s still serves the queue", master.Addr)
	}
	if lostSeeds := checkLoss(ctx, t, hosts, f); seedWait > 0 && lostSeeds > 0 {
		t.Errorf("%d seeds lost in the failover with SeedWait %v, want 0", lostSeeds, seedWait)
	}
}

// checkLoss checks that no host seeded before the failover (and
// replicated, WAIT) was lost, and logs what asynchronous replication lost
// of the writes of the failover's last moment.
func checkLoss(ctx context.Context, t *testing.T, before []host.Name, f *fleet) (lostSeeds int) {
	t.Helper()
	known, probed := tableOf(ctx, t, f.s)
	for _, h := range before {
		if !known[h] {
			t.Errorf("host %s, seeded and replicated before the failover, is not in the host table", h)
		}
	}
	for _, h := range f.seeded {
		if !known[h] {
			lostSeeds++
		}
	}
	var acked []host.Name
	for h := range f.acked {
		acked = append(acked, h)
	}
	lostAcks := 0
	for _, h := range acked {
		if !probed[h] {
			lostAcks++
		}
	}
	twice := 0
	for _, n := range f.leased {
		if n > 1 {
			twice++
		}
	}
	st, err := f.s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 0 || st.Processing < int64(lostAcks) {
		t.Errorf("after the failover Stats = %+v, want none pending and the %d hosts whose ack was lost still leased", st, lostAcks)
	}
	t.Logf("failover loss: seeds %d of %d seeded meanwhile; acks %d of %d (leased again after the lease TTL); hosts leased twice %d",
		lostSeeds, len(f.seeded), lostAcks, len(acked), twice)
	return lostSeeds
}

// tableOf reads the queue's host table through an export: every host it
// knows, and those whose last probe is recorded (their ack was kept).
func tableOf(ctx context.Context, t *testing.T, s *redisstore.Store) (known, probed map[host.Name]bool) {
	t.Helper()
	known, probed = map[host.Name]bool{}, map[host.Name]bool{}
	err := s.Dump(ctx, func(r queue.Record) error {
		switch {
		case r.Kind == queue.KindSeen:
			known[r.Host] = true
			probed[r.Host] = r.Outcome != ""
		case r.Item != nil:
			known[r.Item.Host] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return known, probed
}

// fleet is the callers of a store during a failover: workers that lease
// and ack, a seeder that seeds new hosts, and what each call answered.
type fleet struct {
	s    *redisstore.Store
	em   *redisstore.Emitted // the output's seen set: a claim script and a transaction per host
	stop chan struct{}       // closed: workers stop once nothing is pending

	mu     sync.Mutex
	acked  map[host.Name]int // hosts whose ack answered true
	leased map[host.Name]int // hosts Lease answered
	seeded []host.Name       // hosts Seed added
	errs   []error
}

func (f *fleet) note(err error) {
	if err != nil {
		f.mu.Lock()
		f.errs = append(f.errs, err)
		f.mu.Unlock()
	}
}

// seed seeds five new hosts at a time until stop is closed.
func (f *fleet) seed(ctx context.Context, stop <-chan struct{}) error {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		case <-time.After(2 * time.Millisecond):
		}
		hs := make([]host.Name, 5)
		for j := range hs {
			hs[j] = host.Name(fmt.Sprintf("s%d-%d.example", i, j))
		}
		if _, err := f.s.Seed(ctx, hs); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		f.mu.Lock()
		f.seeded = append(f.seeded, hs...)
		f.mu.Unlock()
	}
}

// work leases and acks hosts until f.stop is closed and none is pending,
// noting each lease and ack.
func (f *fleet) work(ctx context.Context) error {
	for {
		ls, err := f.s.Lease(ctx, 5, time.Minute, 0)
		if err != nil {
			return fmt.Errorf("lease: %w", err)
		}
		if len(ls) == 0 {
			select {
			case <-f.stop:
			default:
				continue
			}
			st, err := f.s.Stats(ctx)
			if err != nil {
				return fmt.Errorf("stats: %w", err)
			}
			if st.Pending == 0 {
				return nil
			}
			continue
		}
		f.mu.Lock()
		for _, l := range ls {
			f.leased[l.Item.Host]++
		}
		f.mu.Unlock()
		time.Sleep(20 * time.Millisecond) // the probe
		ps := make([]queue.Visit, len(ls))
		written := make([]string, len(ls))
		for i, l := range ls {
			ps[i] = queue.Visit{Host: l.Item.Host, At: time.Now().Unix(), Outcome: "ok"}
			written[i] = string(l.Item.Host)
		}
		if _, err := f.em.Seen(ctx, "run", written); err != nil {
			return fmt.Errorf("emitted seen: %w", err)
		}
		if err := f.em.Mark(ctx, "run", written); err != nil {
			return fmt.Errorf("emitted mark: %w", err)
		}
		ok, err := f.s.AckAll(ctx, ls, ps)
		if err != nil {
			return fmt.Errorf("ack: %w", err)
		}
		f.mu.Lock()
		for i, l := range ls {
			if ok[i] {
				f.acked[l.Item.Host]++
			}
		}
		f.mu.Unlock()
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

// TestSeedWait: with Options.SeedWait a seed returns once a replica has it:
// while the replica is stopped, a seed waits until it runs again, or until
// SeedWait has passed, which is not an error.
func TestSeedWait(t *testing.T) {
	ctx := context.Background()
	c := redistest.StartCluster(t, 3, 1)
	client := clientOf(t, c)
	const key = "{seedwait}:queue"
	open := func(wait time.Duration) *redisstore.Store {
		s, err := redisstore.Open(ctx, client, redisstore.Options{Key: key, SeedWait: wait})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	short, long := open(100*time.Millisecond), open(5*time.Second)
	master := c.MasterOf(t, key)
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	waitUntil(t, 20*time.Second, func() bool { n, err := mc.Wait(ctx, 1, 200*time.Millisecond).Result(); return err == nil && n == 1 })
	replica := replicaOf(t, c, master)

	if err := syscall.Kill(replica.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	const pause = 800 * time.Millisecond
	resumed := time.AfterFunc(pause, func() { syscall.Kill(replica.PID(), syscall.SIGCONT) })
	defer func() {
		if resumed.Stop() {
			syscall.Kill(replica.PID(), syscall.SIGCONT)
		}
	}()
	start := time.Now()
	if res, err := short.Seed(ctx, []host.Name{"short.example"}); err != nil || res.Added != 1 {
		t.Fatalf("Seed with a short SeedWait = %+v, %v; want 1 added, no error", res, err)
	}
	if took := time.Since(start); took < 90*time.Millisecond || took > pause {
		t.Errorf("Seed with SeedWait 100ms took %v while the replica was stopped, want about 100ms", took)
	}
	if res, err := long.Seed(ctx, []host.Name{"long.example"}); err != nil || res.Added != 1 {
		t.Fatalf("Seed with a long SeedWait = %+v, %v; want 1 added, no error", res, err)
	}
	if since := time.Since(stopped); since < pause-50*time.Millisecond {
		t.Errorf("Seed with SeedWait 5s returned %v after the replica stopped, before it ran again (%v)", since, pause)
	}
}

// replicaOf returns the live replica of master.
func replicaOf(t *testing.T, c *redistest.Cluster, master *redistest.Server) *redistest.Server {
	t.Helper()
	_, port, _ := net.SplitHostPort(master.Addr)
	for _, s := range c.Nodes {
		if s.PID() == 0 || s == master {
			continue
		}
		rc := redis.NewClient(&redis.Options{Addr: s.Addr})
		role, err := rc.Do(context.Background(), "ROLE").Slice()
		rc.Close()
		if err == nil && len(role) > 2 && role[0] == "slave" && fmt.Sprint(role[2]) == port {
			return s
		}
	}
	t.Fatalf("no replica of %s", master.Addr)
	return nil
}

// BenchmarkSeedWait is what Options.SeedWait costs a seed of 100 new hosts
// on a cluster whose masters have a replica each: one more round trip to
// the master, and the wait for the replica's acknowledgement.
func BenchmarkSeedWait(b *testing.B) {
	ctx := context.Background()
	c := redistest.StartCluster(b, 3, 1)
	client := clientOf(b, c)
	for _, bb := range []struct {
		name string
		wait time.Duration
	}{{"async", 0}, {"seed-wait", time.Second}} {
		b.Run(bb.name, func(b *testing.B) {
			key := "{bench-" + bb.name + "}:queue"
			s, err := redisstore.Open(ctx, client, redisstore.Options{Key: key, SeedWait: bb.wait})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			mc := redis.NewClient(&redis.Options{Addr: c.MasterOf(b, key).Addr})
			defer mc.Close()
			waitUntil(b, 20*time.Second, func() bool { n, err := mc.Wait(ctx, 1, 200*time.Millisecond).Result(); return err == nil && n == 1 })
			hs := make([]host.Name, 100)
			for i := 0; b.Loop(); i++ {
				for j := range hs {
					hs[j] = host.Name(fmt.Sprintf("h%d-%d.example", i, j))
				}
				if _, err := s.Seed(ctx, hs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// clientOf returns NewClient's client of cluster c (the one --redis makes
// from its node list), closed at the test's end.
func clientOf(tb testing.TB, c *redistest.Cluster) redis.UniversalClient {
	tb.Helper()
	client, err := redisstore.NewClient(strings.Join(c.Addrs(), ","))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { client.Close() })
	return client
}
