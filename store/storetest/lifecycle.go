package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

func testAck(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a.x.com", "b.x.com")
	l := mustLeaseOne(t, q, long)
	wantCounts(t, q, 1, 1, 0, 2)
	mustAck(t, q, l)
	wantCounts(t, q, 1, 0, 0, 2)
	if got := hostsOf(mustLease(t, q, 10, long)); !cmp.Equal(got, []string{"b.x.com"}) {
		t.Errorf("Lease() after ack = %v, want [b.x.com]", got)
	}
}

func testAckTwice(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a.com")
	l := mustLeaseOne(t, q, long)
	mustAck(t, q, l)
	if err := Ack(context.Background(), q, l); !isLeaseLost(err) {
		t.Errorf("second Ack() error = %v, want ErrLeaseLost", err)
	}
	if _, err := q.Extend(context.Background(), l, long); !isLeaseLost(err) {
		t.Errorf("Extend() after Ack error = %v, want ErrLeaseLost", err)
	}
	if err := q.Fail(context.Background(), l, "x", 3); !isLeaseLost(err) {
		t.Errorf("Fail() after Ack error = %v, want ErrLeaseLost", err)
	}
	wantCounts(t, q, 0, 0, 0, 1)
}

// testAckAll: one AckAll answers each lease on its own, in order: held
// leases are acked; a lease acked already, a stale lease whose host another
// holder has now, and a lease given twice in the call report lost; the other
// holder's lease is left alone.
func testAckAll(t *testing.T, q queue.Queue) {
	ctx := context.Background()
	if ok, err := q.AckAll(ctx, nil, nil); err != nil || len(ok) != 0 {
		t.Errorf("AckAll(nil, nil) = %v, %v; want [], nil", ok, err)
	}
	mustSeed(t, q, "a.x.com", "b.x.com", "c.x.com")
	stale := mustLeaseOne(t, q, 10*time.Millisecond)
	if r := reclaimUntil(t, q, 3, 1); !cmp.Equal(r.Requeued, []string{"a.x.com"}) {
		t.Fatalf("Reclaim() requeued %v, want [a.x.com]", r.Requeued)
	}
	ls := mustLease(t, q, 3, long)
	if got := slices.Sorted(slices.Values(hostsOf(ls))); !cmp.Equal(got, []string{"a.x.com", "b.x.com", "c.x.com"}) {
		t.Fatalf("Lease(3) = %v, want a.x.com, b.x.com and c.x.com", got)
	}
	byHost := map[string]queue.Lease{}
	for _, l := range ls {
		byHost[string(l.Item.Host)] = l
	}
	b, c, cur := byHost["b.x.com"], byHost["c.x.com"], byHost["a.x.com"]
	mustAck(t, q, b)
	ok, err := q.AckAll(ctx, []queue.Lease{c, b, stale, c}, nil)
	if err != nil {
		t.Fatalf("AckAll() error: %v", err)
	}
	if want := []bool{true, false, false, false}; !cmp.Equal(ok, want) {
		t.Errorf("AckAll(c, acked b, stale a, c again) = %v, want %v", ok, want)
	}
	wantCounts(t, q, 0, 1, 0, 3)
	if ok, err := q.AckAll(ctx, []queue.Lease{cur}, nil); err != nil || !cmp.Equal(ok, []bool{true}) {
		t.Errorf("AckAll(current a.x.com) = %v, %v; want [true], nil (its lease untouched)", ok, err)
	}
	wantCounts(t, q, 0, 0, 0, 3)
}

func testExtend(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a.com")
	l := mustLeaseOne(t, q, 10*time.Millisecond)
	l2, err := q.Extend(context.Background(), l, long)
	if err != nil {
		t.Fatalf("Extend() error: %v", err)
	}
	if l2.ID != l.ID || l2.Item.Host != "a.com" {
		t.Errorf("Extend() = lease %q of %s, want the same lease %q of a.com", l2.ID, l2.Item.Host, l.ID)
	}
	if d := time.Until(l2.Deadline); d < long-time.Minute {
		t.Errorf("extended deadline in %v, want about %v", d, long)
	}
	time.Sleep(30 * time.Millisecond) // past the original 10ms deadline
	r, err := q.Reclaim(context.Background(), queue.DefaultLeaseTTL, 3)
	if err != nil {
		t.Fatalf("Reclaim() error: %v", err)
	}
	if len(r.Requeued)+len(r.Dead) != 0 {
		t.Errorf("Reclaim() after Extend = %+v, want nothing reclaimed", r)
	}
	mustAck(t, q, l2)
	wantCounts(t, q, 0, 0, 0, 1)
}

func testStaleLease(t *testing.T, q queue.Queue) {
	ctx := context.Background()
	mustSeed(t, q, "a.com")
	old := mustLeaseOne(t, q, 10*time.Millisecond)
	if r := reclaimUntil(t, q, 3, 1); !cmp.Equal(r.Requeued, []string{"a.com"}) {
		t.Fatalf("Reclaim() requeued %v, want [a.com]", r.Requeued)
	}
	cur := mustLeaseOne(t, q, long)
	if cur.ID == old.ID {
		t.Fatalf("new lease has the reclaimed lease's ID %q", cur.ID)
	}
	if cur.Item.Attempt != 1 {
		t.Errorf("re-leased attempt = %d, want 1", cur.Item.Attempt)
	}
	if err := Ack(ctx, q, old); !isLeaseLost(err) {
		t.Errorf("Ack(stale) error = %v, want ErrLeaseLost", err)
	}
	if _, err := q.Extend(ctx, old, 1*time.Nanosecond); !isLeaseLost(err) {
		t.Errorf("Extend(stale) error = %v, want ErrLeaseLost", err)
	}
	if err := q.Fail(ctx, old, "stale", 1); !isLeaseLost(err) {
		t.Errorf("Fail(stale) error = %v, want ErrLeaseLost", err)
	}
	if n, err := q.Release(ctx, []queue.Lease{old}); err != nil || n != 0 {
		t.Errorf("Release(stale) = %d, %v; want 0, nil", n, err)
	}
	// The new holder's lease is intact: still processing, deadline not moved
	// to 1ns by the stale Extend, and its own Ack works.
	wantCounts(t, q, 0, 1, 0, 1)
	r, err := q.Reclaim(ctx, queue.DefaultLeaseTTL, 3)
	if err != nil || len(r.Requeued)+len(r.Dead) != 0 {
		t.Errorf("Reclaim() after stale calls = %+v, %v; want nothing (new lease untouched)", r, err)
	}
	if _, err := q.Extend(ctx, cur, long); err != nil {
		t.Errorf("Extend(current) error: %v", err)
	}
	mustAck(t, q, cur)
	wantCounts(t, q, 0, 0, 0, 1)
}

func testFailRetriesThenDead(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a.com")
	start := time.Now().Unix()
	for attempt := range 3 {
		l := mustLeaseOne(t, q, long)
		if l.Item.Host != "a.com" || l.Item.Attempt != attempt {
			t.Fatalf("leased %s attempt %d, want a.com attempt %d", l.Item.Host, l.Item.Attempt, attempt)
		}
		mustFail(t, q, l, fmt.Sprintf("boom %d", attempt+1), 3)
		if attempt < 2 {
			wantCounts(t, q, 1, 0, 0, 1)
		}
	}
	wantCounts(t, q, 0, 0, 1, 1)
	dead, err := q.Dead(context.Background(), 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("Dead() = %d items, %v; want 1", len(dead), err)
	}
	d := dead[0]
	if d.Item == nil || d.Item.Host != "a.com" || d.Item.Attempt != 3 {
		t.Errorf("dead item = %+v, want a.com with attempt 3", d.Item)
	}
	if d.Error != "boom 3" {
		t.Errorf("dead error = %q, want the last reason %q", d.Error, "boom 3")
	}
	if d.At < start-1 || d.At > time.Now().Unix()+1 {
		t.Errorf("dead At = %d, want about %d", d.At, start)
	}
}

func testFailMaxOne(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a.com")
	mustFail(t, q, mustLeaseOne(t, q, long), "no retry", 1)
	wantCounts(t, q, 0, 0, 1, 1)
}

func testReclaim(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a.x.com", "b.x.com", "c.x.com", "keep.x.com")
	mustLease(t, q, 3, 10*time.Millisecond)
	keep := mustLeaseOne(t, q, long)
	r := reclaimUntil(t, q, 3, 3)
	if diff := cmp.Diff([]string{"a.x.com", "b.x.com", "c.x.com"}, r.Requeued); diff != "" {
		t.Errorf("Reclaim() requeued (-want +got):\n%s", diff)
	}
	if len(r.Dead) != 0 {
		t.Errorf("Reclaim() dead = %v, want none", r.Dead)
	}
	wantCounts(t, q, 3, 1, 0, 4)
	for _, l := range mustLease(t, q, 10, long) {
		if l.Item.Attempt != 1 {
			t.Errorf("reclaimed %s attempt = %d, want 1", l.Item.Host, l.Item.Attempt)
		}
	}
	mustAck(t, q, keep)
}

func testReclaimDead(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a.com")
	mustLease(t, q, 1, 10*time.Millisecond)
	r := reclaimUntil(t, q, 1, 1)
	if !cmp.Equal(r.Dead, []string{"a.com"}) || len(r.Requeued) != 0 {
		t.Errorf("Reclaim(max 1) = %+v, want a.com dead", r)
	}
	wantCounts(t, q, 0, 0, 1, 1)
	dead, err := q.Dead(context.Background(), 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("Dead() = %d, %v; want 1 item", len(dead), err)
	}
	if dead[0].Error == "" || dead[0].Item == nil || dead[0].Item.Attempt != 1 {
		t.Errorf("dead = %+v (item %+v), want a reason and attempt 1", dead[0], dead[0].Item)
	}
}

func testRelease(t *testing.T, q queue.Queue) {
	ctx := context.Background()
	mustSeed(t, q, "a.com", "b.com", "c.com", "d.com")
	ls := mustLease(t, q, 3, long)
	mustAck(t, q, ls[2])
	n, err := q.Release(ctx, ls)
	if err != nil || n != 2 {
		t.Fatalf("Release(2 held, 1 acked) = %d, %v; want 2, nil", n, err)
	}
	wantCounts(t, q, 3, 0, 0, 4)
	for _, l := range ls[:2] {
		if err := Ack(ctx, q, l); !isLeaseLost(err) {
			t.Errorf("Ack(released %s) error = %v, want ErrLeaseLost", l.Item.Host, err)
		}
	}
	got := map[string]queue.Lease{}
	for _, l := range mustLease(t, q, 10, long) {
		got[string(l.Item.Host)] = l
	}
	for _, l := range ls[:2] {
		g, ok := got[string(l.Item.Host)]
		if !ok {
			t.Errorf("released %s not pending again", l.Item.Host)
			continue
		}
		if string(g.Raw) != string(l.Raw) || g.Item.Attempt != 0 {
			t.Errorf("released %s came back as %s, want unchanged %s", l.Item.Host, g.Raw, l.Raw)
		}
	}
	if n, err := q.Release(ctx, nil); err != nil || n != 0 {
		t.Errorf("Release(nil) = %d, %v; want 0, nil", n, err)
	}
}

func testStats(t *testing.T, q queue.Queue) {
	wantCounts(t, q, 0, 0, 0, 0)
	if s := mustStats(t, q); s.OldestLeaseAge != 0 {
		t.Errorf("empty Stats().OldestLeaseAge = %v, want 0", s.OldestLeaseAge)
	}
	mustSeed(t, q, "a.com", "b.com", "c.com", "d.com", "e.com")
	ls := mustLease(t, q, 3, long)
	mustFail(t, q, ls[0], "x", 1)
	mustAck(t, q, ls[1])
	wantCounts(t, q, 2, 1, 1, 5)
}

func testStatsLeaseAge(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a.com", "b.com")
	mustLeaseOne(t, q, long)
	time.Sleep(60 * time.Millisecond)
	l := mustLeaseOne(t, q, long)
	s := mustStats(t, q)
	if s.OldestLeaseAge < 50*time.Millisecond || s.OldestLeaseAge > time.Minute {
		t.Errorf("Stats().OldestLeaseAge = %v, want the older lease's age (>= 60ms)", s.OldestLeaseAge)
	}
	mustAck(t, q, l)
}

func testDeadRetryPurge(t *testing.T, q queue.Queue) {
	ctx := context.Background()
	mustSeed(t, q, "a.x.com", "b.x.com", "c.x.com")
	for _, l := range mustLease(t, q, 3, long) {
		mustFail(t, q, l, "down: "+string(l.Item.Host), 1)
	}
	dead, err := q.Dead(ctx, 2)
	if err != nil {
		t.Fatalf("Dead(2) error: %v", err)
	}
	var got []string
	for _, d := range dead {
		got = append(got, string(d.Item.Host)+" "+d.Error)
	}
	if diff := cmp.Diff([]string{"a.x.com down: a.x.com", "b.x.com down: b.x.com"}, got); diff != "" {
		t.Errorf("Dead(2) oldest first (-want +got):\n%s", diff)
	}
	if n, err := q.RetryDead(ctx, 1); err != nil || n != 1 {
		t.Errorf("RetryDead(1) = %d, %v; want 1, nil", n, err)
	}
	wantCounts(t, q, 1, 0, 2, 3)
	if n, err := q.RetryDead(ctx, 0); err != nil || n != 2 {
		t.Errorf("RetryDead(0) = %d, %v; want 2, nil", n, err)
	}
	wantCounts(t, q, 3, 0, 0, 3)
	ls := mustLease(t, q, 10, long)
	if len(ls) != 3 {
		t.Fatalf("Lease() after RetryDead = %d items, want 3", len(ls))
	}
	for _, l := range ls {
		if l.Item.Attempt != 0 {
			t.Errorf("retried %s attempt = %d, want 0", l.Item.Host, l.Item.Attempt)
		}
		mustFail(t, q, l, "again", 1)
	}
	if n, err := q.PurgeDead(ctx); err != nil || n != 3 {
		t.Errorf("PurgeDead() = %d, %v; want 3, nil", n, err)
	}
	wantCounts(t, q, 0, 0, 0, 3)
	if dead, err := q.Dead(ctx, 0); err != nil || len(dead) != 0 {
		t.Errorf("Dead() after purge = %d items, %v; want none", len(dead), err)
	}
}

func testClosed(t *testing.T, q queue.Queue) {
	ctx := context.Background()
	mustSeed(t, q, "a.com", "b.com")
	l := mustLeaseOne(t, q, long)
	if err := q.Close(); err != nil {
		t.Fatalf("Close() error: %v", err)
	}
	calls := map[string]func() error{
		"Seed":  func() error { _, err := q.Seed(ctx, []host.Name{"c.com"}); return err },
		"Lease": func() error { _, err := q.Lease(ctx, 1, long, time.Second); return err },
		"AckAll": func() error {
			_, err := q.AckAll(ctx, []queue.Lease{l}, nil)
			return err
		},
		"Extend": func() error {
			_, err := q.Extend(ctx, l, long)
			return err
		},
		"Fail":      func() error { return q.Fail(ctx, l, "x", 3) },
		"Release":   func() error { _, err := q.Release(ctx, []queue.Lease{l}); return err },
		"Reclaim":   func() error { _, err := q.Reclaim(ctx, long, 3); return err },
		"Stats":     func() error { _, err := q.Stats(ctx); return err },
		"Dead":      func() error { _, err := q.Dead(ctx, 0); return err },
		"RetryDead": func() error { _, err := q.RetryDead(ctx, 0); return err },
		"PurgeDead": func() error { _, err := q.PurgeDead(ctx); return err },
		"Dump":      func() error { return q.Dump(ctx, func(queue.Record) error { return nil }) },
		"Load":      func() error { return q.Load(ctx, nil) },
	}
	for name, call := range calls {
		start := time.Now()
		if err := call(); !errors.Is(err, queue.ErrClosed) {
			t.Errorf("%s() after Close error = %v, want ErrClosed", name, err)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("%s() after Close took %v, want an immediate error", name, d)
		}
	}
}

func testDeadNeverTrimmed(t *testing.T, q queue.Queue) {
	const n = 2000
	recs := make([]queue.Record, n)
	for i := range recs {
		recs[i] = queue.Record{Kind: queue.KindDead, Item: &queue.Item{Host: host.Name(fmt.Sprintf("d%d.com", i)), TS: 1, Attempt: 3},
			Error: fmt.Sprintf("error %d", i), At: int64(i)}
	}
	if err := q.Load(context.Background(), recs); err != nil {
		t.Fatalf("Load() error: %v", err)
	}
	mustSeed(t, q, "a.com")
	mustFail(t, q, mustLeaseOne(t, q, long), "last", 1)
	wantCounts(t, q, 0, 0, n+1, 1)
	dead, err := q.Dead(context.Background(), 0)
	if err != nil || len(dead) != n+1 {
		t.Fatalf("Dead(0) = %d items, %v; want %d", len(dead), err, n+1)
	}
	if dead[0].Error != "error 0" || dead[n].Error != "last" {
		t.Errorf("Dead(0) first/last errors = %q/%q, want oldest first: %q/%q", dead[0].Error, dead[n].Error, "error 0", "last")
	}
}
