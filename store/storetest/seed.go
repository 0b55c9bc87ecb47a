package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

func testSeedCounts(t *testing.T, q queue.Queue) {
	res := mustSeed(t, q, "a.x.com", "B.x.com.", "https://c.x.com/x?y", "a.x.com")
	if res.Added != 3 || res.Duplicate != 1 {
		t.Errorf("Seed() added/duplicate = %d/%d, want 3/1", res.Added, res.Duplicate)
	}
	res = mustSeed(t, q, "a.x.com", "d.x.com", "C.X.COM")
	if res.Added != 1 || res.Duplicate != 2 {
		t.Errorf("second Seed() = %+v, want 1 added, 2 duplicate", res)
	}
	wantCounts(t, q, 4, 0, 0, 4)
	got := hostsOf(mustLease(t, q, 10, long))
	if diff := cmp.Diff([]string{"a.x.com", "b.x.com", "c.x.com", "d.x.com"}, got); diff != "" {
		t.Errorf("leased hosts (-want +got):\n%s", diff)
	}
}

func testSeedDedupWithinCall(t *testing.T, q queue.Queue) {
	hosts := make([]string, 0, 3000)
	for i := range 1000 {
		h := fmt.Sprintf("h%d.example.com", i)
		hosts = append(hosts, h, "HTTPS://"+h+"/", h+".")
	}
	res := mustSeed(t, q, hosts...)
	if res.Added != 1000 || res.Duplicate != 2000 {
		t.Errorf("Seed() = %d added, %d duplicate; want 1000, 2000", res.Added, res.Duplicate)
	}
	wantCounts(t, q, 1000, 0, 0, 1000)
}

func testSeedDedupAfterAck(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a.com")
	mustAck(t, q, mustLeaseOne(t, q, long))
	res := mustSeed(t, q, "a.com", "b.com")
	if res.Added != 1 || res.Duplicate != 1 {
		t.Errorf("Seed() after ack = %+v, want 1 added (b.com), 1 duplicate (a.com)", res)
	}
	wantCounts(t, q, 1, 0, 0, 2)
}

func testSeedItemJSON(t *testing.T, q queue.Queue) {
	before := time.Now().Unix()
	mustSeed(t, q, "Example.COM.")
	after := time.Now().Unix()
	l := mustLeaseOne(t, q, long)
	if l.Item.Host != "example.com" || l.Item.Attempt != 0 || len(l.Item.Extra) != 0 {
		t.Errorf("leased item = %+v, want host example.com, attempt 0, no extra fields", l.Item)
	}
	if l.Item.TS < before || l.Item.TS > after {
		t.Errorf("item ts = %d, want between %d and %d (Unix seconds at seed)", l.Item.TS, before, after)
	}
	want := fmt.Sprintf(`{"host":"example.com","ts":%d,"attempt":0}`, l.Item.TS)
	if string(l.Raw) != want {
		t.Errorf("lease Raw = %s, want %s (the item bytes of the older spyder's list protocol)", l.Raw, want)
	}
	if l.ID == "" {
		t.Error("lease ID is empty")
	}
	if d := time.Until(l.Deadline); d < long-time.Minute || d > long+time.Minute {
		t.Errorf("lease deadline in %v, want about %v", d, long)
	}
}

func testSeedCancelled(t *testing.T, q queue.Queue) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := q.Seed(ctx, []host.Name{"a.com", "b.com"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Seed(cancelled ctx) error = %v, want context.Canceled", err)
	}
	wantCounts(t, q, 0, 0, 0, 0)
}
