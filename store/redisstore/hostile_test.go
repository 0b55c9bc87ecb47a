package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/internal/clocktest"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/storetest"
)

// These tests push what spyder never writes into every Redis key it owns,
// as another program or a hand edit could, and check that the store copes:
// undecodable items go to dead with the reason and their bytes, work goes
// on (Lease, Ack, Reclaim, Stats, Export, Dead), nothing else is lost; a key
// of the wrong type, where "to dead" makes no sense, gets one clear error
// naming it, and no call half-applies around it.

const hostileGood = 20 // good hosts seeded beside the garbage

var goodHosts = storetest.GoodHosts(hostileGood)

// hostileKeys are the queue's keys under base, as the package doc lists.
type hostileKeys struct {
	pending, legacy, leases, dead, seen, seq, noticed, spool, probed string // seen: the host table's meta; probed: its long hash
}

func keysOf(base string) hostileKeys {
	return hostileKeys{base, base + ":processing", base + ":leases", base + ":dead", base + ":hosts#meta",
		base + ":lease-seq", base + ":processing-noticed", base + ":spool", base + ":hosts#long"}
}

// mustHostileStore opens a store on a fresh base with a hand clock and
// seeds the good hosts.
func mustHostileStore(t *testing.T) (*redisstore.Store, hostileKeys, *clocktest.Clock) {
	t.Helper()
	clk := clocktest.New(time.Now()) // real time, so garbage scored by it makes sense
	s := MustOpen(t, "", &redisstore.Options{Now: clk.Now})
	if _, err := s.Seed(context.Background(), storetest.Names(t, goodHosts...)); err != nil {
		t.Fatal(err)
	}
	return s, keysOf(s.Key()), clk
}

// drainRedis works the queue the way workers do: Reclaim (twice, a lease
// TTL apart, so items an older worker left are taken too), then Lease and
// Ack until nothing is left. It returns the hosts acked.
func drainRedis(t *testing.T, s *redisstore.Store, clk *clocktest.Clock) map[string]int {
	t.Helper()
	ctx := context.Background()
	for range 2 {
		if _, err := s.Reclaim(ctx, time.Minute, 3); err != nil {
			t.Fatalf("Reclaim() error: %v", err)
		}
		clk.Add(2 * time.Minute)
	}
	return storetest.Drain(t, s)
}

// checkExport checks that Stats and Export agree on how many records the
// queue holds, and that the export imports.
func checkExport(t *testing.T, s *redisstore.Store) queue.Stats {
	t.Helper()
	ctx := context.Background()
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats() error: %v", err)
	}
	if lines, want := storetest.ExportImports(t, s), st.Pending+st.Processing+st.Dead+st.Seen; lines != want {
		t.Errorf("Export() wrote %d lines, Stats() counts %d records (%+v)", lines, want, st)
	}
	return st
}

// TestStore_HostileItems pushes undecodable items into pending, the legacy
// processing list and the leases: each goes to dead with the reason and
// its bytes, every good host is leased and acked once, and the queue's
// other calls keep working.
func TestStore_HostileItems(t *testing.T) {
	t.Parallel()
	lpush := func(key func(hostileKeys) string, v []byte) func(context.Context, redis.UniversalClient, hostileKeys) error {
		return func(ctx context.Context, c redis.UniversalClient, k hostileKeys) error {
			return c.LPush(ctx, key(k), v).Err()
		}
	}
	pending := func(k hostileKeys) string { return k.pending }
	legacy := func(k hostileKeys) string { return k.legacy }
	lease := func(score float64, member string) func(context.Context, redis.UniversalClient, hostileKeys) error {
		return func(ctx context.Context, c redis.UniversalClient, k hostileKeys) error {
			if score == 0 {
				score = float64(time.Now().Add(-time.Hour).UnixMilli())
			}
			return c.ZAdd(ctx, k.leases, redis.Z{Score: score, Member: member}).Err()
		}
	}
	valid := `{"host":"%s","ts":1,"attempt":0}`
	type test struct {
		name     string
		inject   func(context.Context, redis.UniversalClient, hostileKeys) error
		dead     []byte   // the bytes that must end in dead, whole
		reason   string   // part of the dead item's error
		moreGood []string // decodable hosts the garbage came with
	}
	var tests []test
	for _, h := range storetest.HostileItems() {
		tt := test{name: "Pending" + h.Name, inject: lpush(pending, h.Raw), reason: h.Reason}
		if h.Reason != "" {
			tt.dead = h.Raw
		} else {
			tt.moreGood = []string{h.Host}
		}
		tests = append(tests, tt)
	}
	tests = append(tests, []test{
		{"LegacyGarbage", lpush(legacy, []byte("not json")), []byte("not json"), "undecodable item", nil},
		{"LegacyValidItem", lpush(legacy, fmt.Appendf(nil, valid, "legacy.example.com")), nil, "", []string{"legacy.example.com"}},
		{"LeaseMemberWithoutSpace", lease(0, "garbage-without-a-space"), []byte("garbage-without-a-space"), "undecodable item", nil},
		{"LeaseMemberEmpty", lease(0, ""), []byte{}, "undecodable item", nil},
		{"LeaseGarbageItem", lease(0, "1-1 not json"), []byte("not json"), "undecodable item", nil},
		{"LeaseGarbageNotExpired", lease(float64(time.Now().Add(time.Minute).UnixMilli()), `2-2 {"host":5}`), []byte(`{"host":5}`), "undecodable item", nil},
		{"LeaseScorePlusInf", lease(math.Inf(1), "3-3 "+fmt.Sprintf(valid, "forever.example.com")), nil, "", []string{"forever.example.com"}},
		{"LeaseScoreMinusInf", lease(math.Inf(-1), "4-4 "+fmt.Sprintf(valid, "minus.example.com")), nil, "", []string{"minus.example.com"}},
		{"LeaseScoreFarFuture", lease(1e15, "5-5 not json either"), []byte("not json either"), "undecodable item", nil},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, k, clk := mustHostileStore(t)
			if err := tt.inject(ctx, s.Client(), k); err != nil {
				t.Fatalf("inject: %v", err)
			}
			checkExport(t, s)
			acked := drainRedis(t, s, clk)
			storetest.CheckDrained(t, s, acked, goodHosts, tt.moreGood, tt.dead, tt.reason)
			if st := checkExport(t, s); st.Pending != 0 || st.Processing != 0 || st.Seen != hostileGood {
				t.Errorf("Stats() after draining = %+v, want nothing pending or processing, %d seen", st, hostileGood)
			}
		})
	}
}

// TestStore_HostileRecords puts garbage in the dead list and the host table:
// every call still works and the garbage is kept, listed and exported.
func TestStore_HostileRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, k, clk := mustHostileStore(t)
	c := s.Client()
	garbage := []string{"not json", `{"item":5}`, `[]`, "\xff\xfe", ""}
	for _, g := range garbage {
		if err := c.RPush(ctx, k.dead, g).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Records of names no host has, counted as spyder counts its own.
	if err := c.HSet(ctx, k.probed, "\xff not a host", "q", "", "1 ok").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HIncrBy(ctx, k.seen, "n", 2).Err(); err != nil {
		t.Fatal(err)
	}
	st := checkExport(t, s)
	if st.Dead != int64(len(garbage)) || st.Seen != hostileGood+2 {
		t.Errorf("Stats() = %+v, want %d dead, %d seen", st, len(garbage), hostileGood+2)
	}
	dead, err := s.Dead(ctx, 0)
	if err != nil {
		t.Fatalf("Dead() error: %v", err)
	}
	for i, d := range dead {
		if string(d.Raw) != garbage[i] || d.Error == "" {
			t.Errorf("Dead()[%d] = %q, %q; want the entry %q whole, with an error saying what it is", i, d.Raw, d.Error, garbage[i])
		}
	}
	if acked := drainRedis(t, s, clk); len(acked) != hostileGood {
		t.Errorf("acked %d hosts, want %d", len(acked), hostileGood)
	}
	// Retried, the garbage dies again with the reason; nothing else moves.
	if n, err := s.RetryDead(ctx, 0); err != nil || n != len(garbage) {
		t.Errorf("RetryDead() = %d, %v; want %d", n, err, len(garbage))
	}
	if acked := drainRedis(t, s, clk); len(acked) != 0 {
		t.Errorf("after RetryDead acked %v, want nothing", acked)
	}
	if st := checkExport(t, s); st.Dead != int64(len(garbage)) {
		t.Errorf("Stats().Dead after RetryDead = %d, want %d", st.Dead, len(garbage))
	}
	if n, err := s.PurgeDead(ctx); err != nil || n != len(garbage) {
		t.Errorf("PurgeDead() = %d, %v; want %d", n, err, len(garbage))
	}
}

// TestStore_HostileKeyTypes replaces each key of the queue with one of
// another type (the key moved aside, as if another program had used the
// name): every call that needs the key fails with an error naming it and
// changes nothing, the others work, and once the key is put back no host
// has been lost or marked seen without being queued.
func TestStore_HostileKeyTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		key   func(hostileKeys) string
		write func(ctx context.Context, c redis.UniversalClient, key string) error
		says  string // part of the error
	}{
		{"PendingString", func(k hostileKeys) string { return k.pending }, setString, "list"},
		{"LeasesString", func(k hostileKeys) string { return k.leases }, setString, "zset"},
		{"DeadHash", func(k hostileKeys) string { return k.dead }, setHash, "list"},
		{"HostsMetaList", func(k hostileKeys) string { return k.seen }, setList, "hash"},
		{"LegacyString", func(k hostileKeys) string { return k.legacy }, setString, "list"},
		{"NoticedString", func(k hostileKeys) string { return k.noticed }, setString, "hash"},
		{"LeaseSeqList", func(k hostileKeys) string { return k.seq }, setList, "string"},
		{"LeaseSeqGarbage", func(k hostileKeys) string { return k.seq }, setString, "integer"},
		{"HostsLongString", func(k hostileKeys) string { return k.probed }, setString, "hash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, k, clk := mustHostileStore(t)
			c := s.Client()
			// A legacy item and an expired lease, so that Reclaim has work
			// touching every key.
			if err := c.LPush(ctx, k.legacy, `{"host":"legacy.example.com","ts":1,"attempt":0}`).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Reclaim(ctx, time.Minute, 3); err != nil { // notices the legacy item
				t.Fatal(err)
			}
			held, err := s.Lease(ctx, 3, time.Minute, 0)
			if err != nil || len(held) != 3 {
				t.Fatalf("Lease(3) = %d, %v", len(held), err)
			}
			if _, err := s.Lease(ctx, 1, time.Millisecond, 0); err != nil { // expires at once
				t.Fatal(err)
			}
			clk.Add(2 * time.Minute)
			for i := range held {
				if held[i], err = s.Extend(ctx, held[i], time.Hour); err != nil {
					t.Fatal(err)
				}
			}

			bad := tt.key(k)
			aside := bad + ":aside"
			if n, _ := c.Exists(ctx, bad).Result(); n == 1 {
				if err := c.Rename(ctx, bad, aside).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := tt.write(ctx, c, bad); err != nil {
				t.Fatal(err)
			}
			// Every call: an error names the key and changes nothing, or the
			// call works.
			do := func(op string, call func() error) bool {
				t.Helper()
				before := dumpKeys(t, c, k, bad)
				err := call()
				if err == nil || errors.Is(err, queue.ErrLeaseLost) {
					return true
				}
				if !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), tt.says) {
					t.Errorf("%s with %s bad: %v; want an error naming the key and what is wrong (%q)", op, bad, err, tt.says)
				}
				// Reclaim claims expired leases in one script and settles
				// them in another: a failed settle leaves them claimed,
				// held under its own leases, which expire and are
				// reclaimed again. Every other call changes nothing.
				if after := dumpKeys(t, c, k, bad); after != before && op != "Reclaim" {
					t.Errorf("%s failed but changed the queue:\nbefore %s\nafter  %s", op, before, after)
				}
				return false
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			seeded := do("Seed", func() error {
				_, err := s.Seed(cctx, []host.Name{"new1.example.com", "new2.example.com"})
				return err
			})
			do("Lease", func() error {
				ls, err := s.Lease(cctx, 2, time.Minute, 0)
				held = append(held, ls...)
				return err
			})
			acked := do("Ack", func() error {
				ok, err := s.AckAll(cctx, held[:1], []queue.Visit{{Host: held[0].Item.Host, At: 1, Outcome: "ok"}})
				if err == nil && !ok[0] {
					err = queue.ErrLeaseLost
				}
				return err
			})
			failed := do("Fail", func() error { return s.Fail(cctx, held[1], "boom", 3) })
			do("Reclaim", func() error { _, err := s.Reclaim(cctx, time.Minute, 3); return err })
			released := do("Release", func() error { _, err := s.Release(cctx, held[2:]); return err })
			do("Stats", func() error { _, err := s.Stats(cctx); return err })
			do("Export", func() error { return queue.Export(cctx, s, &bytes.Buffer{}) })
			do("Dead", func() error { _, err := s.Dead(cctx, 0); return err })
			do("RetryDead", func() error { _, err := s.RetryDead(cctx, 0); return err })

			// Put the key back: nothing may be missing.
			if err := c.Del(ctx, bad).Err(); err != nil {
				t.Fatal(err)
			}
			if n, _ := c.Exists(ctx, aside).Result(); n == 1 {
				if err := c.Rename(ctx, aside, bad).Err(); err != nil {
					t.Fatal(err)
				}
			}
			res, err := s.Seed(ctx, []host.Name{"new1.example.com", "new2.example.com"})
			if err != nil {
				t.Fatalf("Seed() after the key was put back: %v", err)
			}
			if !seeded && res.Added != 2 {
				t.Errorf("Seed() after a failed Seed added %d, want 2: the failed Seed marked hosts seen without queueing them", res.Added)
			}
			if !acked {
				if err := storetest.Ack(ctx, s, held[0]); err != nil {
					t.Fatalf("Ack() after the key was put back: %v", err)
				}
			}
			if !released {
				if _, err := s.Release(ctx, held[2:]); err != nil {
					t.Fatalf("Release() after the key was put back: %v", err)
				}
			}
			if !failed {
				if err := s.Fail(ctx, held[1], "boom", 3); err != nil {
					t.Fatalf("Fail() after the key was put back: %v", err)
				}
			}
			got := drainRedis(t, s, clk)
			want := append([]string{"legacy.example.com", "new1.example.com", "new2.example.com"}, goodHosts...)
			for _, h := range want {
				n := got[h]
				if h == string(held[0].Item.Host) {
					n++
				}
				if n != 1 {
					t.Errorf("%s acked %d times in all, want 1", h, n)
				}
			}
			if st := checkExport(t, s); st.Pending != 0 || st.Processing != 0 || st.Dead != 0 {
				t.Errorf("Stats() after draining = %+v, want everything done", st)
			}
		})
	}
}

func setString(ctx context.Context, c redis.UniversalClient, key string) error {
	return c.Set(ctx, key, "garbage", 0).Err()
}

func setHash(ctx context.Context, c redis.UniversalClient, key string) error {
	return c.HSet(ctx, key, "f", "v").Err()
}

func setList(ctx context.Context, c redis.UniversalClient, key string) error {
	return c.RPush(ctx, key, "x").Err()
}

// dumpKeys describes the queue's keys (all but skip) for comparison.
func dumpKeys(t *testing.T, c redis.UniversalClient, k hostileKeys, skip string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, key := range []string{k.pending, k.legacy, k.leases, k.dead, k.seen, k.seq, k.noticed, k.probed} {
		if key == skip {
			continue
		}
		v, err := c.Dump(ctx, key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%x ", key[len(k.pending):], v)
	}
	return b.String()
}

// TestSpool_HostileRedis: a spool entry spyder did not write (no "b"
// field) does not block the spool; a spool key of another type gets an
// error naming it.
func TestSpool_HostileRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := MustOpen(t, "", nil)
	c, k := s.Client(), keysOf(s.Key())
	sp := redisstore.NewSpool(c, s.Key())
	if err := c.XAdd(ctx, &redis.XAddArgs{Stream: k.spool, Values: []any{"other", "field"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := sp.Put(ctx, []byte(`{"batch":1}`)); err != nil {
		t.Fatal(err)
	}
	id, data, err := sp.Peek(ctx)
	if err != nil || string(data) != `{"batch":1}` {
		t.Fatalf("Peek() = %q, %q, %v; want the batch spyder spooled", id, data, err)
	}
	if err := sp.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if id, _, err := sp.Peek(ctx); err != nil || id != "" {
		t.Errorf("Peek() with only a foreign entry left = %q, %v; want empty", id, err)
	}
	if err := c.Del(ctx, k.spool).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, k.spool, "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for op, err := range map[string]error{
		"Put":  sp.Put(ctx, []byte("b")),
		"Peek": func() error { _, _, err := sp.Peek(ctx); return err }(),
		"Len":  func() error { _, err := sp.Len(ctx); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), k.spool) {
			t.Errorf("spool %s with %s a string: %v, want an error naming the key", op, k.spool, err)
		}
	}
}
