package redisstore

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestScripts_RetryIsAnsweredNotRerun: a script call run again with the
// same token (go-redis retrying after losing the reply) returns the first
// outcome and changes nothing more.
func TestScripts_RetryIsAnsweredNotRerun(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	k := newKeys(redistest.Prefix(t))
	replies := k.pending + ":replies:test"
	items := []any{`{"host":"a.com","ts":1,"attempt":0}`, `{"host":"b.com","ts":1,"attempt":0}`, "x y\n z"}
	if err := c.LPush(ctx, k.pending, items...).Err(); err != nil {
		t.Fatal(err)
	}
	hot := func(token int, args ...any) []any {
		t.Helper()
		v, err := leaseAckScript.Run(ctx, c, []string{k.pending, k.leases, k.leaseSeq, replies, k.hostsMeta},
			append([]any{token, "1000"}, args...)...).Slice()
		if err != nil {
			t.Fatalf("leaseack error: %v", err)
		}
		return v
	}
	first := hot(1, 0, 0, "", 2, 60000, 1, 60000) // two callers: 2 items and 1
	again := hot(1, 0, 0, "", 2, 60000, 1, 60000)
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("leaseack retried (-first +retry):\n%s", diff)
	}
	if len(first) != 4 || first[3] != "3-1000 x y\n z" {
		t.Fatalf("leaseack = %q, want now and three lease members", first)
	}
	if n := c.ZCard(ctx, k.leases).Val(); n != 3 {
		t.Errorf("ZCARD leases = %d after a retried lease, want 3", n)
	}
	m := first[1].(string)
	ack := hot(2, 1, m, 1, appendHostHash(nil, "a.com"), "a.com", "1 ok")
	if diff := cmp.Diff([]any{int64(1000), int64(1)}, ack); diff != "" {
		t.Errorf("ack (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ack, hot(2, 1, m, 1, appendHostHash(nil, "a.com"), "a.com", "1 ok")); diff != "" {
		t.Errorf("ack retried (-first +retry):\n%s", diff)
	}
	if diff := cmp.Diff([]any{int64(1000), int64(0)}, hot(3, 1, m, 0, "")); diff != "" {
		t.Errorf("second ack, new token (-want +got):\n%s", diff)
	}

	m2 := first[2].(string)
	fin := func(token int) []any {
		v, err := finishScript.Run(ctx, c, []string{k.leases, k.pending, k.dead, replies, k.hostsMeta}, token, m2, "pending", "again").Slice()
		if err != nil {
			t.Fatalf("finish error: %v", err)
		}
		return v
	}
	if diff := cmp.Diff([]any{int64(1)}, fin(1)); diff != "" {
		t.Errorf("finish (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{int64(1)}, fin(1)); diff != "" {
		t.Errorf("finish retried (-want +got):\n%s", diff)
	}
	if got := c.LRange(ctx, k.pending, 0, -1).Val(); !cmp.Equal(got, []string{"again"}) {
		t.Errorf("pending after a retried finish = %q, want one push", got)
	}
}
