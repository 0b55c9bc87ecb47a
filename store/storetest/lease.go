package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

func testLeaseFIFO(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a1.x.com", "a2.x.com", "a3.x.com")
	mustSeed(t, q, "a4.x.com", "a5.x.com")
	first := hostsOf(mustLease(t, q, 2, long))
	rest := hostsOf(mustLease(t, q, 10, long))
	if diff := cmp.Diff([]string{"a1.x.com", "a2.x.com"}, first); diff != "" {
		t.Errorf("Lease(2) hosts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a3.x.com", "a4.x.com", "a5.x.com"}, rest); diff != "" {
		t.Errorf("Lease(10) hosts (-want +got):\n%s", diff)
	}
	if ls := mustLease(t, q, 1, long); len(ls) != 0 {
		t.Errorf("Lease() on empty queue = %v, want none", hostsOf(ls))
	}
}

func testLeaseExclusive(t *testing.T, q queue.Queue) {
	const n = 300
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("x%d.com", i)
	}
	mustSeed(t, q, hosts...)
	var (
		mu     sync.Mutex
		got    = map[string]int{}
		leases = map[string]bool{}
		wg     sync.WaitGroup
	)
	for w := range 8 {
		wg.Go(func() {
			for {
				ls, err := q.Lease(context.Background(), 1+w%3, long, 0)
				if err != nil {
					t.Errorf("Lease() error: %v", err)
					return
				}
				if len(ls) == 0 {
					return
				}
				mu.Lock()
				for _, l := range ls {
					got[string(l.Item.Host)]++
					if leases[l.ID] {
						t.Errorf("lease ID %q handed out twice", l.ID)
					}
					leases[l.ID] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != n {
		t.Errorf("leased %d distinct hosts, want %d", len(got), n)
	}
	for h, c := range got {
		if c != 1 {
			t.Errorf("host %s leased %d times, want 1", h, c)
		}
	}
	wantCounts(t, q, 0, n, 0, n)
}

func testLeaseEmptyWaits(t *testing.T, q queue.Queue) {
	start := time.Now()
	ls, err := q.Lease(context.Background(), 1, long, 0)
	if err != nil || len(ls) != 0 {
		t.Fatalf("Lease(wait 0) on empty = %d leases, %v; want 0, nil", len(ls), err)
	}
	pass := time.Since(start) // one look at every shard, however loaded the machine
	if pass > time.Second {
		t.Errorf("Lease(wait 0) took %v, want no waiting", pass)
	}
	const wait = 200 * time.Millisecond
	start = time.Now()
	ls, err = q.Lease(context.Background(), 1, long, wait)
	d := time.Since(start)
	if err != nil || len(ls) != 0 {
		t.Fatalf("Lease(wait %v) on empty = %d leases, %v; want 0, nil", wait, len(ls), err)
	}
	// The wait ends with a last look at every shard, which takes as long
	// as the look above did (on a loaded machine, with many shards, more
	// than a second).
	if d < wait-20*time.Millisecond || d > wait+2*time.Second+2*pass {
		t.Errorf("Lease(wait %v) on empty returned after %v, want about %v (a look at every shard took %v)", wait, d, wait, pass)
	}
}

func testLeaseWakes(t *testing.T, q queue.Queue) {
	go func() {
		time.Sleep(50 * time.Millisecond)
		if _, err := q.Seed(context.Background(), []host.Name{"late.com"}); err != nil {
			t.Errorf("Seed() error: %v", err)
		}
	}()
	start := time.Now()
	ls, err := q.Lease(context.Background(), 1, long, 10*time.Second)
	if err != nil || len(ls) != 1 || ls[0].Item.Host != "late.com" {
		t.Fatalf("Lease(wait 10s) = %v, %v; want [late.com]", hostsOf(ls), err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Lease() returned %v after the seed, want soon after work arrives", d)
	}
}

func testLeaseCancel(t *testing.T, q queue.Queue) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := q.Lease(ctx, 1, long, 30*time.Second)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Lease(cancelled while waiting) error = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Lease() returned %v after cancel, want promptly", d)
	}

	// A cancelled ctx leases nothing, even when work is there.
	mustSeed(t, q, "a.com")
	if _, err := q.Lease(ctx, 1, long, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Lease(cancelled ctx) error = %v, want context.Canceled", err)
	}
	wantCounts(t, q, 1, 0, 0, 1)
}

func testLeaseUndecodable(t *testing.T, q queue.Queue) {
	recs := []queue.Record{
		{Kind: queue.KindPending, Raw: []byte("not json at all")},
		{Kind: queue.KindPending, Raw: []byte(`{"host":"-bad-.com","ts":1,"attempt":0}`)},
		{Kind: queue.KindPending, Item: &queue.Item{Host: "good.com", TS: 1}},
	}
	if err := q.Load(context.Background(), recs); err != nil {
		t.Fatalf("Load() error: %v", err)
	}
	ls := mustLease(t, q, 1, long)
	if diff := cmp.Diff([]string{"good.com"}, hostsOf(ls)); diff != "" {
		t.Errorf("Lease(1) past undecodable items (-want +got):\n%s", diff)
	}
	dead, err := q.Dead(context.Background(), 0)
	if err != nil {
		t.Fatalf("Dead() error: %v", err)
	}
	if len(dead) != 2 {
		t.Fatalf("Dead() = %d items, want the 2 undecodable ones", len(dead))
	}
	for i, want := range []string{"not json at all", `{"host":"-bad-.com","ts":1,"attempt":0}`} {
		if string(dead[i].Raw) != want {
			t.Errorf("Dead()[%d].Raw = %q, want %q", i, dead[i].Raw, want)
		}
		if dead[i].Error == "" {
			t.Errorf("Dead()[%d].Error is empty, want the reason", i)
		}
		if dead[i].Item != nil {
			t.Errorf("Dead()[%d].Item = %+v, want nil for undecodable bytes", i, dead[i].Item)
		}
	}
	if !strings.Contains(dead[1].Error, "hyphen") {
		t.Errorf("Dead()[1].Error = %q, want the host's reason (hyphen)", dead[1].Error)
	}
	wantCounts(t, q, 0, 1, 2, 0)
}
