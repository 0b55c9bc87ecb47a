package redisstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/internal/clocktest"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
	"github.com/spyder-crawler/spyder/store/storetest"
)

// newClock returns a hand-moved clock at a fixed time.
func newClock() *clocktest.Clock { return clocktest.New(time.UnixMilli(1_705_312_200_000)) }

func mustLeaseOne(tb testing.TB, s *redisstore.Store, ttl time.Duration) queue.Lease {
	tb.Helper()
	ls, err := s.Lease(context.Background(), 1, ttl, 0)
	if err != nil || len(ls) != 1 {
		tb.Fatalf("Lease(1) = %d leases, %v; want 1", len(ls), err)
	}
	return ls[0]
}

// TestStore_Lease_HandPushedItem: items pushed by hand as the original
// protocol does are leased, byte for byte, unknown fields and all.
func TestStore_Lease_HandPushedItem(t *testing.T) {
	ctx := context.Background()
	s := MustOpen(t, "", nil)
	c, k := s.Client(), s.Key()
	plain := `{"host":"example.com","ts":1705312200,"attempt":0}`
	odd := `{"host":"Example.ORG.", "ts":1705312201,"attempt":2,"via":{"a": [1, 2]},"note":"é"}`
	if err := c.LPush(ctx, k, plain, odd).Err(); err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, 5, time.Minute, 0)
	if err != nil {
		t.Fatalf("Lease() error: %v", err)
	}
	if len(ls) != 2 {
		t.Fatalf("Lease() = %d leases, want 2", len(ls))
	}
	if string(ls[0].Raw) != plain || ls[0].Item.Host != "example.com" || ls[0].Item.TS != 1705312200 {
		t.Errorf("lease 0 = %s %+v, want the first pushed item", ls[0].Raw, ls[0].Item)
	}
	if string(ls[1].Raw) != odd {
		t.Errorf("lease 1 Raw = %s, want %s byte for byte", ls[1].Raw, odd)
	}
	wantExtra := []queue.Field{{Name: "via", Value: json.RawMessage(`{"a": [1, 2]}`)}, {Name: "note", Value: json.RawMessage(`"é"`)}}
	if diff := cmp.Diff(wantExtra, ls[1].Item.Extra); diff != "" {
		t.Errorf("lease 1 Extra (-want +got):\n%s", diff)
	}
	if ls[1].Item.Host != "example.org" || ls[1].Item.Attempt != 2 {
		t.Errorf("lease 1 host/attempt = %s/%d, want example.org/2", ls[1].Item.Host, ls[1].Item.Attempt)
	}
	// In flight, as redis-cli shows it (see the package doc).
	if n := c.LLen(ctx, k).Val(); n != 0 {
		t.Errorf("LLEN %s = %d, want 0", k, n)
	}
	for _, l := range ls {
		m := l.ID + " " + string(l.Raw)
		if got, err := c.ZScore(ctx, k+":leases", m).Result(); err != nil || int64(got) != l.Deadline.UnixMilli() {
			t.Errorf("ZSCORE %s:leases %q = %v, %v; want deadline %d", k, m, got, err, l.Deadline.UnixMilli())
		}
	}
	for _, l := range ls {
		if err := storetest.Ack(ctx, s, l); err != nil {
			t.Errorf("Ack() error: %v", err)
		}
	}
	if n := c.Exists(ctx, k, k+":leases", k+":processing").Val(); n != 0 {
		t.Errorf("after Ack, %d queue keys remain, want 0", n)
	}
}

// TestStore_Reclaim_LegacyProcessing: an item an older worker left in
// {base}:processing with no lease record is reclaimed once one lease TTL has
// passed since Reclaim first noticed it, not before; one the older worker
// acks meanwhile is forgotten.
func TestStore_Reclaim_LegacyProcessing(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := MustOpen(t, "", &redisstore.Options{Now: clk.Now})
	c, k := s.Client(), s.Key()
	stuck := `{"host":"stuck.com","ts":1,"attempt":0,"x":1}`
	acked := `{"host":"acked.com","ts":1,"attempt":0}`
	junk := `{"host":`
	if err := c.RPush(ctx, k+":processing", stuck, acked, junk).Err(); err != nil {
		t.Fatal(err)
	}
	const ttl = 2 * time.Minute
	reclaim := func() queue.ReclaimResult {
		t.Helper()
		r, err := s.Reclaim(ctx, ttl, 3)
		if err != nil {
			t.Fatalf("Reclaim() error: %v", err)
		}
		return r
	}
	if r := reclaim(); len(r.Requeued)+len(r.Dead) != 0 {
		t.Errorf("Reclaim() on first notice = %+v, want nothing", r)
	}
	if st, _ := s.Stats(ctx); st.Processing != 3 {
		t.Errorf("Stats().Processing = %d, want the 3 legacy items", st.Processing)
	}
	// The older worker acks one, as it does: LREM.
	if err := c.LRem(ctx, k+":processing", 1, acked).Err(); err != nil {
		t.Fatal(err)
	}
	clk.Add(ttl - time.Millisecond)
	if r := reclaim(); len(r.Requeued)+len(r.Dead) != 0 {
		t.Errorf("Reclaim() before a TTL passed = %+v, want nothing", r)
	}
	clk.Add(time.Millisecond)
	r := reclaim()
	if !cmp.Equal(r.Requeued, []string{"stuck.com"}) || len(r.Dead) != 1 {
		t.Errorf("Reclaim() after a TTL = %+v, want stuck.com requeued and the junk dead", r)
	}
	if got := c.LRange(ctx, k, 0, -1).Val(); !cmp.Equal(got, []string{`{"host":"stuck.com","ts":1,"attempt":1,"x":1}`}) {
		t.Errorf("LRANGE %s = %q, want stuck.com with attempt 1", k, got)
	}
	if n := c.Exists(ctx, k+":processing", k+":processing-noticed", k+":leases").Val(); n != 0 {
		t.Errorf("after reclaim, %d legacy or lease keys remain, want 0", n)
	}
	dead, err := s.Dead(ctx, 0)
	if err != nil || len(dead) != 1 || string(dead[0].Raw) != junk || !strings.Contains(dead[0].Error, "JSON") {
		t.Errorf("Dead() = %+v, %v; want the junk with a JSON reason", dead, err)
	}
}

// TestStore_Lease_UndecodableGoesDead: bytes that are not an item never
// crash or block a worker: each goes to dead with the reason, byte for byte,
// and the next Lease carries on.
func TestStore_Lease_UndecodableGoesDead(t *testing.T) {
	ctx := context.Background()
	s := MustOpen(t, "", nil)
	c, k := s.Client(), s.Key()
	random := make([]byte, 300)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	huge := `{"host":"` + strings.Repeat("a", 1<<20) + `.com","ts":1,"attempt":0}`
	bad := []struct {
		raw    string
		reason string
	}{
		{string(random), "invalid character"},
		{`{"host":"a.com","ts":17053`, "JSON"},
		{`{"host":5,"ts":1,"attempt":0}`, "host"},
		{`{"host":"a.com","ts":"yesterday","attempt":0}`, "ts"},
		{`{"host":"a.com","ts":1,"attempt":-1}`, "attempt"},
		{`["a.com"]`, "object"},
		{`null`, "null"},
		{huge, "too long"},
		{`{"host":"10.0.0.1","ts":1,"attempt":0}`, "IP address"},
	}
	for _, b := range bad {
		if err := c.LPush(ctx, k, b.raw).Err(); err != nil {
			t.Fatal(err)
		}
	}
	good := `{"host":"good.com","ts":1,"attempt":0}`
	if err := c.LPush(ctx, k, good).Err(); err != nil {
		t.Fatal(err)
	}
	l := mustLeaseOne(t, s, time.Minute)
	if string(l.Raw) != good {
		t.Errorf("Lease() past undecodable items = %s, want %s", l.Raw, good)
	}
	dead, err := s.Dead(ctx, 0)
	if err != nil {
		t.Fatalf("Dead() error: %v", err)
	}
	if len(dead) != len(bad) {
		t.Fatalf("Dead() = %d items, want %d", len(dead), len(bad))
	}
	for i, b := range bad {
		if string(dead[i].Raw) != b.raw {
			t.Errorf("Dead()[%d].Raw = %.40q (%d bytes), want %.40q (%d bytes)", i, dead[i].Raw, len(dead[i].Raw), b.raw, len(b.raw))
		}
		if !strings.Contains(dead[i].Error, b.reason) {
			t.Errorf("Dead()[%d].Error = %q, want it to mention %q", i, dead[i].Error, b.reason)
		}
		if dead[i].Item != nil {
			t.Errorf("Dead()[%d].Item = %+v, want nil", i, dead[i].Item)
		}
	}
	if st, err := s.Stats(ctx); err != nil || st.Pending != 0 || st.Processing != 1 || st.Dead != int64(len(bad)) {
		t.Errorf("Stats() = %+v, %v; want 0 pending, 1 processing, %d dead", st, err, len(bad))
	}
	if err := storetest.Ack(ctx, s, l); err != nil {
		t.Errorf("Ack() error: %v", err)
	}
}

// TestStore_Lease_DeadlineFromServerClock: with no Options.Now, deadlines
// come from the Redis server's clock.
func TestStore_Lease_DeadlineFromServerClock(t *testing.T) {
	ctx := context.Background()
	s := MustOpen(t, "", nil)
	if _, err := s.Seed(ctx, []host.Name{"a.com"}); err != nil {
		t.Fatal(err)
	}
	server, err := s.Client().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	l := mustLeaseOne(t, s, time.Minute)
	if d := l.Deadline.Sub(server); d < time.Minute-time.Second || d > time.Minute+time.Second {
		t.Errorf("deadline - server time = %v, want about 1m", d)
	}
}

// TestStore_Seed_Chunks: seeding more than one chunk dedups across chunks
// and calls, and LLEN keeps meaning pending.
func TestStore_Seed_Chunks(t *testing.T) {
	ctx := context.Background()
	s := MustOpen(t, "", nil)
	hosts := make([]host.Name, 12_000)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("h%d.example.com", i%9000))
	}
	res, err := s.Seed(ctx, hosts)
	if err != nil || res.Added != 9000 || res.Duplicate != 3000 {
		t.Fatalf("Seed() = %+v, %v; want 9000 added, 3000 duplicate", res, err)
	}
	res, err = s.Seed(ctx, hosts[:10])
	if err != nil || res.Added != 0 || res.Duplicate != 10 {
		t.Errorf("Seed(again) = %+v, %v; want 10 duplicate", res, err)
	}
	if n := s.Client().LLen(ctx, s.Key()).Val(); n != 9000 {
		t.Errorf("LLEN = %d, want 9000", n)
	}
	if st, err := s.Stats(ctx); err != nil || st.Seen != 9000 {
		t.Errorf("Stats = %+v, %v; want 9000 seen", st, err)
	}
}

// TestStore_RedisRestart: workers leasing and acking while the server is
// killed and restarted (with an fsync-always AOF, so acknowledged writes
// survive) lose nothing: every item ends acked exactly as the workers saw
// it. Calls whose reply the restart cut are retried by the client and
// answered from the store's replies hash, so no ack reports a lost lease
// and no lease is run twice; leases that still got an error come back
// through Reclaim.
func TestStore_RedisRestart(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	s := MustOpenAt(t, srv.Addr, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const items = 2000
	hosts := make([]host.Name, items)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("r%d.example.com", i))
	}
	if res, err := s.Seed(ctx, hosts); err != nil || res.Added != items {
		t.Fatalf("Seed() = %+v, %v", res, err)
	}
	const ttl = 2 * time.Second
	var (
		mu        sync.Mutex
		acked     = map[host.Name]int{}
		restarted bool
		after     int // acks after the restart
		lost      []host.Name
		errs      int
		wg        sync.WaitGroup
		stop      = make(chan struct{})
		halfway   = make(chan struct{})
		halfOnce  sync.Once
	)
	ackOne := func(l queue.Lease) {
		for ctx.Err() == nil {
			err := storetest.Ack(ctx, s, l)
			mu.Lock()
			switch {
			case err == nil:
				acked[l.Item.Host]++
				if restarted {
					after++
				}
				if len(acked) == items/2 {
					halfOnce.Do(func() { close(halfway) })
				}
			case errors.Is(err, queue.ErrLeaseLost):
				lost = append(lost, l.Item.Host)
			default:
				errs++
			}
			mu.Unlock()
			if err == nil || errors.Is(err, queue.ErrLeaseLost) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ls, err := s.Lease(ctx, 4, ttl, 20*time.Millisecond)
				if err != nil {
					mu.Lock()
					errs++
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					continue
				}
				for _, l := range ls {
					time.Sleep(time.Millisecond) // the probe
					ackOne(l)
				}
				if len(ls) == 0 {
					_, _ = s.Reclaim(ctx, ttl, 100)
				}
			}
		})
	}
	select {
	case <-halfway:
	case <-ctx.Done():
		t.Fatal("workers did not get halfway")
	}
	srv.Restart(t)
	mu.Lock()
	restarted = true
	mu.Unlock()
	var st queue.Stats
	for ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		var err error
		if st, err = s.Stats(ctx); err == nil && st.Pending+st.Processing == 0 {
			break
		}
	}
	close(stop)
	wg.Wait()
	if st.Pending != 0 || st.Processing != 0 || st.Dead != 0 || st.Seen != items {
		t.Errorf("Stats() = %+v; want everything done and %d seen", st, items)
	}
	for _, h := range hosts {
		if acked[h] == 0 {
			t.Errorf("host %s was never acked", h)
		}
	}
	if len(lost) > 0 {
		t.Errorf("Ack() reported ErrLeaseLost for %v: a retried call ran twice", lost)
	}
	if after == 0 {
		t.Errorf("no ack after the restart: it did not happen inside the lease loop")
	}
	t.Logf("%d errors seen by workers; %d acks after the restart; %d hosts acked twice", errs, after, countOver(acked, 1))
}

func countOver(m map[host.Name]int, n int) int {
	c := 0
	for _, v := range m {
		if v > n {
			c++
		}
	}
	return c
}

// TestStore_Close: a closed store reports queue.ErrClosed and leaves the
// client, which its caller owns, open.
func TestStore_Close(t *testing.T) {
	s := MustOpen(t, "", nil)
	if err := s.Close(); err != nil {
		t.Fatalf("Close() error: %v", err)
	}
	if _, err := s.Lease(context.Background(), 1, time.Minute, 0); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Lease() after Close error = %v, want ErrClosed", err)
	}
	if err := s.Client().Ping(context.Background()).Err(); err != nil {
		t.Errorf("client Ping() after store Close error: %v", err)
	}
}

// TestStore_Stats_LeaseAgeOnInjectedClock: deadlines and lease age follow
// Options.Now; Extend moves the deadline, not the lease's age.
func TestStore_Stats_LeaseAgeOnInjectedClock(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := MustOpen(t, "", &redisstore.Options{Now: clk.Now})
	if _, err := s.Seed(ctx, []host.Name{"a.com", "b.com"}); err != nil {
		t.Fatal(err)
	}
	start := clk.Now()
	l := mustLeaseOne(t, s, time.Minute)
	if want := start.Add(time.Minute); !l.Deadline.Equal(want) {
		t.Errorf("Lease().Deadline = %v, want %v", l.Deadline, want)
	}
	clk.Add(50 * time.Second)
	l, err := s.Extend(ctx, l, time.Minute)
	if err != nil {
		t.Fatalf("Extend() error: %v", err)
	}
	if want := start.Add(110 * time.Second); !l.Deadline.Equal(want) {
		t.Errorf("Extend().Deadline = %v, want %v", l.Deadline, want)
	}
	clk.Add(40 * time.Second)
	mustLeaseOne(t, s, time.Minute)
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats() error: %v", err)
	}
	if st.OldestLeaseAge != 90*time.Second || st.Processing != 2 {
		t.Errorf("Stats() age %v, processing %d; want 1m30s, 2", st.OldestLeaseAge, st.Processing)
	}
	// Past the first deadline (110s) but not the second's (90s+60s).
	clk.Add(30 * time.Second)
	r, err := s.Reclaim(ctx, time.Minute, 3)
	if err != nil || !cmp.Equal(r.Requeued, []string{"a.com"}) {
		t.Errorf("Reclaim() = %+v, %v; want a.com requeued", r, err)
	}
	if err := storetest.Ack(ctx, s, l); !errors.Is(err, queue.ErrLeaseLost) {
		t.Errorf("Ack(reclaimed lease) error = %v, want ErrLeaseLost", err)
	}
}

// TestOpen_ACLUser: a user limited to the queue's keys and the commands the
// store runs (no INFO) can open and use it.
func TestOpen_ACLUser(t *testing.T) {
	ctx := context.Background()
	addr := redistest.Addr(t)
	base := redistest.Prefix(t)
	user := strings.ReplaceAll(base, ":", "-")
	admin, err := redisstore.NewClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~"+base+"*",
		"-@all", "+@scripting", "+@read", "+@write", "+time", "-info", "+ping").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	defer admin.Do(ctx, "ACL", "DELUSER", user)
	c, err := redisstore.NewClient("redis://" + user + ":pw@" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Info(ctx, "server").Err(); err == nil {
		t.Fatalf("INFO as %s succeeded; the test wants a user without it", user)
	}
	s, err := redisstore.Open(ctx, c, redisstore.Options{Key: base})
	if err != nil {
		t.Fatalf("Open() as an ACL user error: %v", err)
	}
	defer s.Close()
	if _, err := s.Seed(ctx, []host.Name{"a.com"}); err != nil {
		t.Fatalf("Seed() error: %v", err)
	}
	l := mustLeaseOne(t, s, time.Minute)
	if err := storetest.Ack(ctx, s, l); err != nil {
		t.Errorf("Ack() error: %v", err)
	}
	if _, err := s.Reclaim(ctx, time.Minute, 3); err != nil {
		t.Errorf("Reclaim() error: %v", err)
	}
	if _, err := s.Stats(ctx); err != nil {
		t.Errorf("Stats() error: %v", err)
	}
	var buf bytes.Buffer
	if err := queue.Export(ctx, s, &buf); err != nil || !strings.Contains(buf.String(), `"host":"a.com"`) {
		t.Errorf("Export() = %q, %v; want the seen host", buf.String(), err)
	}
	if _, err := s.PurgeDead(ctx); err != nil {
		t.Errorf("PurgeDead() error: %v", err)
	}
}
