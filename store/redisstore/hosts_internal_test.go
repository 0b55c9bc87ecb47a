package redisstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// tableRecords reads every record of the host table at base.
func tableRecords(t *testing.T, c redis.UniversalClient, base string) map[string]string {
	t.Helper()
	ctx := context.Background()
	nb, err := tableBuckets(ctx, c, base)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i := int64(0); i <= nb; i++ {
		key := base + "#long"
		if i < nb {
			key = bucketKey(base, i)
		}
		for h, v := range c.HGetAll(ctx, key).Val() {
			if _, dup := out[h]; dup {
				t.Errorf("host %s has two records", h)
			}
			out[h] = v
		}
	}
	return out
}

// TestHostTable_GrowsCompact seeds 30,000 hosts (the first 5,000 in one
// script call into an empty table) and acks some: every record is found,
// the table splits as it grows, and every bucket stays a listpack, the
// encoding that keeps a record to a few dozen bytes.
func TestHostTable_GrowsCompact(t *testing.T) {
	ctx := context.Background()
	c, s := openHostsTest(t)
	const n = 30_000
	hosts := make([]host.Name, n)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("h%05d.example", i))
	}
	long := host.Name(strings.Repeat("a", 60) + ".example") // over 64 bytes
	if res, err := s.Seed(ctx, append(hosts, long)); err != nil || res.Added != n+1 {
		t.Fatalf("Seed = %+v, %v; want %d added", res, err, n+1)
	}
	nb, err := s.tableBuckets(ctx, s.k.hosts)
	if err != nil {
		t.Fatal(err)
	}
	if nb < n/(2*hostLoad) || nb > n/hostLoad+1 {
		t.Errorf("%d buckets for %d hosts, want about %d", nb, n, n/hostLoad)
	}
	for i := int64(0); i < nb; i++ {
		if enc := c.ObjectEncoding(ctx, bucketKey(s.k.hosts, i)).Val(); enc != "listpack" {
			t.Errorf("bucket %d is a %s, want a listpack", i, enc)
		}
	}
	recs := tableRecords(t, c, s.k.hosts)
	if len(recs) != n+1 || recs[string(long)] != "q" || recs["h00042.example"] != "q" {
		t.Errorf("%d records (long host %q, h00042 %q), want %d all q", len(recs), recs[string(long)], recs["h00042.example"], n+1)
	}
	if got := c.HGet(ctx, s.k.hosts+"#long", string(long)).Val(); got != "q" {
		t.Errorf("long host's record in #long = %q, want q", got)
	}
	queued, err := s.Queued(ctx, append(hosts, long, "never.example"))
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range queued {
		if q != (i <= n) {
			t.Fatalf("Queued[%d] = %v", i, q)
		}
	}
	st, err := s.Stats(ctx)
	if err != nil || st.Seen != n+1 {
		t.Errorf("Stats = %+v, %v; want seen %d", st, err, n+1)
	}
	// Requeue scans every bucket: ack all with a probe, requeue one outcome.
	var ls []queue.Lease
	for len(ls) < n+1 {
		got, err := s.Lease(ctx, 1000, queue.DefaultLeaseTTL, 0)
		if err != nil || len(got) == 0 {
			t.Fatalf("Lease after %d = %d, %v", len(ls), len(got), err)
		}
		ls = append(ls, got...)
	}
	ps := make([]queue.Visit, len(ls))
	for i, l := range ls {
		ps[i] = queue.Visit{Host: l.Item.Host, At: 100, Outcome: []string{"ok", "timeout"}[i%2]}
	}
	if _, err := s.AckAll(ctx, ls, ps); err != nil {
		t.Fatal(err)
	}
	moved, err := s.Requeue(ctx, queue.Selector{Outcomes: []string{"timeout"}})
	if err != nil || moved != (n+1)/2 {
		t.Errorf("Requeue = %d, %v; want %d", moved, err, (n+1)/2)
	}
}

// TestOpen_RefusesOlderLayout: a queue written by a spyder before the host
// table (a seen set) is refused with what to do, and left as it was.
func TestOpen_RefusesOlderLayout(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	k := newKeys(redistest.Prefix(t))
	c.SAdd(ctx, k.oldSeen, "a.com")
	_, err := Open(ctx, c, Options{Key: k.pending})
	if err == nil || !strings.Contains(err.Error(), "layout of an older spyder") || !strings.Contains(err.Error(), "spyder queue export") {
		t.Fatalf("Open over the older layout = %v, want the refusal saying to export and import", err)
	}
	if n := c.SCard(ctx, k.oldSeen).Val(); n != 1 {
		t.Errorf("seen set holds %d after the refusal, want 1", n)
	}
}

// TestHostHash_MatchesLua: the hash the client sends with each host it
// writes, as lh_unpacked reads it, is lh_hash of buckets.lua, which splits
// and the other scripts use: were they to differ, a seeded host would sit
// in a bucket its own lookups never read, and be seeded again.
func TestHostHash_MatchesLua(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	hosts := []any{"a.com", "xn--bcher-kva.example", strings.Repeat("b", 63) + ".example", "h00042.example"}
	for i := range 200 {
		hosts = append(hosts, fmt.Sprintf("host%d.example.org", i))
	}
	var xs []byte
	for _, h := range hosts {
		xs = appendHostHash(xs, h.(string))
	}
	lua := redis.NewScript(bucketsLua + `
local out = {}
for i = 2, #ARGV do
  out[#out + 1] = string.format('%d %d', lh_hash(ARGV[i]), lh_unpacked(ARGV[1], i - 1))
end
return out`)
	got, err := lua.Run(ctx, c, []string{"x"}, append([]any{xs}, hosts...)...).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hosts {
		x := hostHash(h.(string))
		if want := fmt.Sprintf("%d %d", x, x); got[i] != want {
			t.Errorf("lh_hash and lh_unpacked of %q = %s, hostHash = %d", h, got[i], x)
		}
	}
}

// TestHostTable_KeyWithPercent: a bucket's key is made by string.format
// from the table's base, so a '%' in the queue's key must reach the keys
// as it is: every record is found under the literal base, and none was
// written anywhere else.
func TestHostTable_KeyWithPercent(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { c.Close() })
	base := redistest.Prefix(t) + "%d%%s"
	s, err := Open(ctx, c, Options{Key: base})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const n = 3000 // enough to split
	hosts := make([]host.Name, n)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("h%d.example", i))
	}
	if res, err := s.Seed(ctx, hosts); err != nil || res.Added != n {
		t.Fatalf("Seed = %+v, %v; want %d added", res, err, n)
	}
	if got := len(tableRecords(t, c, base+":hosts")); got != n {
		t.Errorf("%d records under %s:hosts, want %d", got, base, n)
	}
	keys, err := c.Keys(ctx, redistest.Prefix(t)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, base+":") {
			t.Errorf("key %q is not under the queue's key %q", k, base)
		}
	}
}

// TestSplitBit_MatchesHash: the split decides whether a member of bucket p
// moves from one character of its SHA-1 (lh_movebit); for every level l
// and host that must agree with lh_hash mod 2^(l+1), the placement that
// lookups and older spyders compute, or a split would strand the hosts it
// moves where no lookup reads them.
func TestSplitBit_MatchesHash(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	var hosts []any
	for i := range 300 {
		hosts = append(hosts, fmt.Sprintf("host%d.example.org", i))
	}
	lua := redis.NewScript(bucketsLua + `
local bad = {}
for l = 0, 40 do
  local t = {l = l}
  local pos, high = lh_movebit(t)
  for i = 1, #ARGV do
    local x = lh_hash(ARGV[i])
    local p = x % 2 ^ l
    local moves = high[string.byte(redis.sha1hex(ARGV[i]), pos)] or false
    if moves ~= (x % 2 ^ (l + 1) ~= p) then
      bad[#bad + 1] = string.format('l=%d %s', l, ARGV[i])
    end
  end
end
return bad`)
	bad, err := lua.Run(ctx, c, []string{"x"}, hosts...).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("the split's bit disagrees with lh_hash for %d (level, host): %v", len(bad), bad[:min(len(bad), 5)])
	}
}

// TestSeed_FindsShortHostInLong: a host with a short name whose probe
// record is over 64 bytes keeps it in the long hash; seeding it again
// finds it there and neither queues it nor leaves a second record.
func TestSeed_FindsShortHostInLong(t *testing.T) {
	ctx := context.Background()
	c, s := openHostsTest(t)
	if _, err := s.Seed(ctx, []host.Name{"a.com", "b.com"}); err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, 2, queue.DefaultLeaseTTL, 0)
	if err != nil || len(ls) != 2 {
		t.Fatalf("Lease = %d, %v", len(ls), err)
	}
	outcome := strings.Repeat("x", 64)
	ps := []queue.Visit{{Host: "a.com", At: 100, Outcome: outcome}, {Host: "b.com", At: 100, Outcome: "ok"}}
	if _, err := s.AckAll(ctx, ls, ps); err != nil {
		t.Fatal(err)
	}
	res, err := s.Seed(ctx, []host.Name{"a.com", "b.com", "c.com", "a.com"})
	if err != nil || res.Added != 1 || res.Duplicate != 3 {
		t.Fatalf("Seed again = %+v, %v; want c.com added, 3 duplicates", res, err)
	}
	want := map[string]string{"a.com": "100 " + outcome, "b.com": "100 ok", "c.com": "q"}
	if got := tableRecords(t, c, s.k.hosts); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records = %v, want %v", got, want)
	}
	if got := c.HGet(ctx, s.k.hosts+"#long", "a.com").Val(); got != "100 "+outcome {
		t.Errorf("a.com in #long = %q, want its long record", got)
	}
}

// openHostsTest opens a store under the test's own key on the shared
// redis-server, with a client of its own; both close with the test.
func openHostsTest(t *testing.T) (*redis.Client, *Store) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { c.Close() })
	s, err := Open(context.Background(), c, Options{Key: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return c, s
}
