package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/store/storetest"
)

// stepClock is a wall clock and a monotonic clock moved by hand apart: Step
// moves the wall clock alone (NTP, date -s), Pass moves both (time going by).
type stepClock struct {
	mu      sync.Mutex
	wall    time.Time
	elapsed time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

func (c *stepClock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.elapsed
}

func (c *stepClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
}

func (c *stepClock) Pass(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
	c.elapsed += d
}

// TestStore_Reclaim_WallClockStep: the wall clock jumps an hour forward, then
// two hours back, while 100 leases are held. No Reclaim in between takes a
// live lease (a forward jump would otherwise hand every host in flight to a
// second worker), Extend and Ack keep working, and leases still expire once
// their TTL has really passed. Item timestamps and death times follow the
// wall clock, and a reopened file judges its leases by the wall clock.
func TestStore_Reclaim_WallClockStep(t *testing.T) {
	ctx := context.Background()
	clk := &stepClock{wall: time.Unix(1705312200, 0)}
	path := filepath.Join(t.TempDir(), "spyder.db")
	s, err := Open(path, Options{NoSync: true, Now: clk.Now, elapsed: clk.Elapsed})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	hosts := make([]host.Name, 100)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("h%03d.com", i))
	}
	if _, err := s.Seed(ctx, hosts); err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, len(hosts), time.Minute, 0)
	if err != nil || len(ls) != len(hosts) {
		t.Fatalf("Lease(%d) = %d leases, %v", len(hosts), len(ls), err)
	}
	mustReclaimNone := func(when string) {
		t.Helper()
		res, err := s.Reclaim(ctx, time.Minute, 3)
		if err != nil {
			t.Fatalf("Reclaim() %s: %v", when, err)
		}
		if n := len(res.Requeued) + len(res.Dead); n != 0 {
			t.Errorf("Reclaim() %s took %d live leases back, want 0", when, n)
		}
		if st, _ := s.Stats(ctx); st.Processing != int64(len(ls)) {
			t.Errorf("Stats().Processing %s = %d, want %d", when, st.Processing, len(ls))
		}
	}

	clk.Pass(30 * time.Second)
	clk.Step(time.Hour)
	mustReclaimNone("after the wall clock jumped 1h forward")
	if st, _ := s.Stats(ctx); st.OldestLeaseAge != 30*time.Second {
		t.Errorf("Stats().OldestLeaseAge after the jump = %v, want 30s", st.OldestLeaseAge)
	}
	// A heartbeat after the jump extends by the TTL, not by TTL plus the jump.
	l0, err := s.Extend(ctx, ls[0], time.Minute)
	if err != nil {
		t.Fatalf("Extend() after the jump: %v", err)
	}
	if want := time.Unix(1705312200, 0).Add(90 * time.Second); !l0.Deadline.Equal(want) {
		t.Errorf("Extend() deadline = %v, want %v (30s elapsed + 1m)", l0.Deadline, want)
	}
	ls[0] = l0
	if err := storetest.Ack(ctx, s, ls[1]); err != nil {
		t.Errorf("Ack() after the jump: %v", err)
	}
	ls = ls[1:]
	ls[0] = l0

	clk.Step(-2 * time.Hour)
	mustReclaimNone("after the wall clock jumped 2h back")
	res, err := s.Seed(ctx, []host.Name{"late.com"})
	if err != nil || res.Added != 1 {
		t.Fatalf("Seed() = %+v, %v", res, err)
	}

	// Real time passes the TTL: every lease but the extended one expires.
	clk.Pass(31 * time.Second)
	r, err := s.Reclaim(ctx, time.Minute, 1)
	if err != nil {
		t.Fatalf("Reclaim() after the TTL: %v", err)
	}
	if len(r.Dead) != len(ls)-1 || len(r.Requeued) != 0 {
		t.Errorf("Reclaim() after the TTL = %d dead, %d requeued; want %d dead (max attempts 1)", len(r.Dead), len(r.Requeued), len(ls)-1)
	}
	dead, err := s.Dead(ctx, 1)
	if err != nil || len(dead) != 1 {
		t.Fatalf("Dead(1) = %v, %v", dead, err)
	}
	if want := clk.Now().Unix(); dead[0].At != want {
		t.Errorf("death time = %d, want the wall clock %d", dead[0].At, want)
	}
	late, err := s.Lease(ctx, 1, time.Minute, 0)
	if err != nil || len(late) != 1 || late[0].Item.Host != "late.com" {
		t.Fatalf("Lease() = %v, %v; want late.com", late, err)
	}
	if want := time.Unix(1705312200, 0).Add(-time.Hour + 30*time.Second).Unix(); late[0].Item.TS != want {
		t.Errorf("ts of an item seeded after the jumps = %d, want the wall clock then, %d", late[0].Item.TS, want)
	}
	clk.Pass(30 * time.Second)
	if r, _ := s.Reclaim(ctx, time.Minute, 3); len(r.Requeued)+len(r.Dead) != 1 {
		t.Errorf("Reclaim() past the extended deadline = %+v, want %s", r, ls[0].Item.Host)
	}

	// Reopened with the wall clock right again, the file judges its leases
	// by it: late.com's lease (taken at elapsed 61s, for 1m) has 30s left.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	reopen := func(wall time.Time) *Store {
		t.Helper()
		s, err := Open(path, Options{NoSync: true, Now: func() time.Time { return wall }})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	start := time.Unix(1705312200, 0)
	s = reopen(start.Add(90 * time.Second))
	if r, _ := s.Reclaim(ctx, time.Minute, 3); len(r.Requeued) != 0 {
		t.Errorf("Reclaim() after reopen before the deadline = %+v, want nothing", r)
	}
	s.Close()
	s = reopen(start.Add(122 * time.Second))
	if r, _ := s.Reclaim(ctx, time.Minute, 3); len(r.Requeued) != 1 {
		t.Errorf("Reclaim() after reopen past the deadline = %+v, want late.com", r)
	}
}
