package redisstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// growHosts returns n host names starting at from.
func growHosts(from, n int) []host.Name {
	hs := make([]host.Name, n)
	for i := range hs {
		hs[i] = host.Name(fmt.Sprintf("g%06d.example", from+i))
	}
	return hs
}

// mustAllQueued fails unless Queued finds every host of hs: each record is
// in the bucket its lookups read.
func mustAllQueued(t *testing.T, s *Store, hs []host.Name) {
	t.Helper()
	q, err := s.Queued(context.Background(), hs)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range q {
		if !ok {
			t.Fatalf("host %s (%d of %d) is not found queued", hs[i], i, len(hs))
		}
	}
}

// bucketKeys counts the keys of the host table at base besides its meta.
func bucketKeys(t *testing.T, c *redis.Client, base string) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	iter := c.Scan(ctx, 0, base+"#*", 1000).Iterator()
	for iter.Next(ctx) {
		if iter.Val() != base+"#meta" {
			n++
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStore_Grow_EmptyTableTakesItsSize: an empty table grown for 100,000
// hosts takes its final 2,500 buckets at once and no key besides its meta;
// 30,000 hosts seeded then (fewer than announced) split nothing, are all
// found, and their buckets stay listpacks; seeding them again adds none.
func TestStore_Grow_EmptyTableTakesItsSize(t *testing.T) {
	ctx := context.Background()
	c, s := openHostsTest(t)
	if err := s.Grow(ctx, 100_000); err != nil {
		t.Fatal(err)
	}
	if nb, err := s.tableBuckets(ctx, s.k.hosts); err != nil || nb != 100_000/hostLoad {
		t.Fatalf("after Grow(100000): %d buckets, %v; want %d", nb, err, 100_000/hostLoad)
	}
	if n := bucketKeys(t, c, s.k.hosts); n != 0 {
		t.Errorf("an empty grown table has %d bucket keys, want 0", n)
	}
	hs := growHosts(0, 30_000)
	for i := 0; i < len(hs); i += 1000 { // one call each: Seed would grow by itself
		if res, err := s.Seed(ctx, hs[i:i+1000]); err != nil || res.Added != 1000 {
			t.Fatalf("Seed = %+v, %v; want 1000 added", res, err)
		}
	}
	if nb, _ := s.tableBuckets(ctx, s.k.hosts); nb != 100_000/hostLoad {
		t.Errorf("after seeding: %d buckets, want still %d", nb, 100_000/hostLoad)
	}
	mustAllQueued(t, s, hs)
	for i := int64(0); i < 100_000/hostLoad; i += 97 {
		if enc := c.ObjectEncoding(ctx, bucketKey(s.k.hosts, i)).Val(); enc != "listpack" {
			t.Errorf("bucket %d is a %s, want a listpack", i, enc)
		}
	}
	if res, err := s.Seed(ctx, hs); err != nil || res.Added != 0 {
		t.Errorf("seeding again = %+v, %v; want 0 added", res, err)
	}
	if err := s.Grow(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if nb, _ := s.tableBuckets(ctx, s.k.hosts); nb != 100_000/hostLoad {
		t.Errorf("Grow of a table with room changed it to %d buckets", nb)
	}
}

// TestStore_Grow_SplitsATableWithMembers: a table of 5,000 hosts grown for
// 20,000 more splits its buckets (over several script calls) to 625, and
// every host is still found where its lookups read.
func TestStore_Grow_SplitsATableWithMembers(t *testing.T) {
	ctx := context.Background()
	_, s := openHostsTest(t)
	hs := growHosts(0, 5000)
	for i := 0; i < len(hs); i += 1000 {
		if _, err := s.Seed(ctx, hs[i:i+1000]); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := s.tableBuckets(ctx, s.k.hosts)
	if err := s.Grow(ctx, 20_000); err != nil {
		t.Fatal(err)
	}
	nb, err := s.tableBuckets(ctx, s.k.hosts)
	if want := int64(25_000 / hostLoad); err != nil || nb != want || nb-before <= growSplits {
		t.Fatalf("Grow(20000) on %d hosts in %d buckets: %d buckets, %v; want %d", len(hs), before, nb, err, want)
	}
	mustAllQueued(t, s, hs)
	if st, err := s.Stats(ctx); err != nil || st.Seen != int64(len(hs)) {
		t.Errorf("Stats = %+v, %v; want %d seen", st, err, len(hs))
	}
}

// TestStore_Seed_GrowsAheadFromItsFirstChunk: a Seed of many hosts makes
// room for as many new ones as its first 1,000 predict: 1,000 new hosts
// followed by 9,000 repeats of them (which the first chunk cannot tell)
// leave a table sized for 10,000, correct and found; the same slice seeded
// again, its first chunk all known, grows nothing, and 2,000 new hosts fit
// in the room left.
func TestStore_Seed_GrowsAheadFromItsFirstChunk(t *testing.T) {
	ctx := context.Background()
	_, s := openHostsTest(t)
	first := growHosts(0, 1000)
	hs := append([]host.Name(nil), first...)
	for range 9 {
		hs = append(hs, first...)
	}
	res, err := s.Seed(ctx, hs)
	if err != nil || res.Added != 1000 || res.Duplicate != 9000 {
		t.Fatalf("Seed = %+v, %v; want 1000 added, 9000 duplicate", res, err)
	}
	nb, _ := s.tableBuckets(ctx, s.k.hosts)
	if want := int64(10_000 / hostLoad); nb != want {
		t.Errorf("%d buckets after seeding, want %d (grown for the 9,000 the first chunk predicted)", nb, want)
	}
	mustAllQueued(t, s, first)
	if res, err := s.Seed(ctx, hs); err != nil || res.Added != 0 {
		t.Fatalf("seeding again = %+v, %v; want 0 added", res, err)
	}
	more := growHosts(1000, 2000)
	if res, err := s.Seed(ctx, more); err != nil || res.Added != 2000 {
		t.Fatalf("Seed of 2,000 new = %+v, %v", res, err)
	}
	if got, _ := s.tableBuckets(ctx, s.k.hosts); got != nb {
		t.Errorf("seeding again and 2,000 new into a table with room: %d buckets, want %d", got, nb)
	}
	mustAllQueued(t, s, more)
}

// TestSharded_Grow_EachShardTakesItsShare: a queue of 8 shards on a Redis
// Cluster grown for 32,000 hosts gives each shard's table 100 buckets (its
// 4,000 at 40 a bucket), each grown by a script on that shard's keys alone;
// 8,000 hosts seeded then are all found and grow no shard further.
func TestSharded_Grow_EachShardTakesItsShare(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.SharedCluster(t).Addrs()})
	defer c.Close()
	s, err := OpenSharded(ctx, c, redistest.Prefix(t), 8, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Grow(ctx, 32_000); err != nil {
		t.Fatal(err)
	}
	hs := growHosts(0, 8000)
	if res, err := s.Seed(ctx, hs); err != nil || res.Added != len(hs) {
		t.Fatalf("Seed = %+v, %v; want %d added", res, err, len(hs))
	}
	for i, st := range s.shards {
		if nb, err := st.tableBuckets(ctx, st.k.hosts); err != nil || nb != 4000/hostLoad {
			t.Errorf("shard %d: %d buckets, %v; want %d", i, nb, err, 4000/hostLoad)
		}
	}
	q, err := s.Queued(ctx, hs)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range q {
		if !ok {
			t.Fatalf("host %s not found queued", hs[i])
		}
	}
}

// TestHomeBucket_MatchesLua: the bucket keys Seed sends are the ones
// lh_key of buckets.lua finds, for tables of every shape (2^l + p buckets,
// p from 0 to near 2^l) and hashes over all 32 bits: were they to differ,
// a seeded host would sit in a bucket its own lookups never read, and be
// seeded again.
func TestHomeBucket_MatchesLua(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	base := redistest.Prefix(t) + "%d:hosts"
	xs := []uint32{0, 1, 2, 3, 1<<31 - 1, 1 << 31, 1<<32 - 1}
	for i := range 300 {
		xs = append(xs, hostHash(fmt.Sprintf("h%d.example", i)))
	}
	var packed []byte
	for _, x := range xs {
		packed = binary.BigEndian.AppendUint32(packed, x)
	}
	lua := redis.NewScript(bucketsLua + `
local t = hosts_open(KEYS[1])
local out = {}
for i = 1, #ARGV[1] / 4 do
  out[i] = lh_key(t, lh_unpacked(ARGV[1], i))
end
return out`)
	for _, nb := range []int64{1, 2, 3, 5, 7, 8, 1000, 2500, 25_000, 1<<20 + 12_345, 1<<21 - 1} {
		l := int64(bits.Len64(uint64(nb)) - 1)
		c.HSet(ctx, base+"#meta", "l", l, "p", nb-1<<l)
		got, err := lua.Run(ctx, c, []string{base + "#meta"}, packed).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range xs {
			if want := bucketKey(base, homeBucket(x, nb)); got[i] != want {
				t.Fatalf("%d buckets, hash %d: lh_key = %s, homeBucket gives %s", nb, x, got[i], want)
			}
		}
	}
}

// TestStore_Seed_KeysOfAnotherGeometry: the bucket keys a process computes
// from what its last seed call saw are not used once the table changed:
// another process filling it so that this call splits it partway (the keys
// are dropped from the first split on), or growing it (its bucket count
// differs). Every host is found where its lookups read.
func TestStore_Seed_KeysOfAnotherGeometry(t *testing.T) {
	ctx := context.Background()
	c, a := openHostsTest(t)
	b, err := Open(ctx, c, Options{Key: a.base})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	seed := func(s *Store, hs []host.Name) {
		t.Helper()
		if res, err := s.Seed(ctx, hs); err != nil || res.Added != len(hs) {
			t.Fatalf("Seed = %+v, %v; want %d added", res, err, len(hs))
		}
	}
	if err := a.Grow(ctx, 2000); err != nil { // 50 buckets, room for 2,000
		t.Fatal(err)
	}
	seed(a, growHosts(0, 1000))
	seed(b, growHosts(1000, 990)) // 1,990 members, still 50 buckets
	if g := a.geo.Load(); g == nil || g.buckets != 50 || g.n != 1000 {
		t.Fatalf("a's geometry %+v, want 50 buckets, 1000 members", g)
	}
	seed(a, growHosts(1990, 1000)) // splits after its first 10
	g := a.geo.Load()
	if err := b.Grow(ctx, 20_000); err != nil { // a's buckets are gone
		t.Fatal(err)
	}
	room := int(hostLoad*g.buckets - g.n)
	if room <= 0 {
		t.Fatalf("a's geometry %+v leaves no room to send keys with", g)
	}
	seed(a, growHosts(2990, room)) // with a's geometry, stale
	all := growHosts(0, 2990+room)
	mustAllQueued(t, a, all)
	if res, err := b.Seed(ctx, all); err != nil || res.Added != 0 {
		t.Errorf("seeding all again = %+v, %v; want 0 added", res, err)
	}
}
