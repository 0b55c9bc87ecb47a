package redisstore

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestLeaseAck_MixedAcks: one call acking held leases, a lease not held and
// the same lease twice answers each ack on its own, removes exactly the held
// leases and leaves the others' leases with their deadlines (a script that
// removed them in bulk would know only how many were held, not which); the
// probes sent with the acks are kept, the lost lease's too, and their
// hosts are seen.
func TestLeaseAck_MixedAcks(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	k := newKeys(redistest.Prefix(t))
	const a, b, other = "1-5 a", "2-5 b", "3-5 c"
	if err := c.ZAdd(ctx, k.leases,
		redis.Z{Score: 7000, Member: a}, redis.Z{Score: 7000, Member: b}, redis.Z{Score: 9000, Member: other}).Err(); err != nil {
		t.Fatal(err)
	}
	probes := []any{appendHostHash(appendHostHash(nil, "a.com"), "gone.com"), "a.com", "1 ok", "gone.com", "1 timeout"}
	ack := func(token int, members ...any) []any {
		t.Helper()
		args := append([]any{token, "1000", len(members)}, members...)
		if token == 1 {
			args = append(append(args, len(probes)/2), probes...)
		} else {
			args = append(args, 0, "")
		}
		v, err := leaseAckScript.Run(ctx, c, []string{k.pending, k.leases, k.leaseSeq, k.pending + ":replies:test", k.hostsMeta}, args...).Slice()
		if err != nil {
			t.Fatalf("leaseack error: %v", err)
		}
		return v
	}

	got := ack(1, a, "9-5 gone", b, a)
	if diff := cmp.Diff([]any{int64(1000), int64(1), int64(0), int64(1), int64(0)}, got); diff != "" {
		t.Errorf("acks of a, a lease not held, b, a again (-want +got):\n%s", diff)
	}
	left, err := c.ZRangeWithScores(ctx, k.leases, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]redis.Z{{Score: 9000, Member: other}}, left); diff != "" {
		t.Errorf("leases after the acks (-want +got):\n%s", diff)
	}
	if got := tableRecords(t, c, k.hosts); !cmp.Equal(got, map[string]string{"a.com": "1 ok", "gone.com": "1 timeout"}) {
		t.Errorf("host records after the acks = %v, want a.com and gone.com's probes", got)
	}

	// All held: answered from the count.
	if err := c.ZAdd(ctx, k.leases, redis.Z{Score: 7000, Member: a}, redis.Z{Score: 7000, Member: b}).Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{int64(1000), int64(1), int64(1)}, ack(2, a, b)); diff != "" {
		t.Errorf("acks of two held leases (-want +got):\n%s", diff)
	}
	if n := c.ZCard(ctx, k.leases).Val(); n != 1 {
		t.Errorf("ZCARD leases = %d after acking a and b, want 1 (the other holder's)", n)
	}
}
